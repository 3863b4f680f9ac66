package testutil

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// RefsRead returns what read (a git that lists refs: for-each-ref, show-ref) prints for
// the repository whose git directory is gitDir, its refs in store when they live outside
// it ("" otherwise). read runs again only when the files git reads refs from have
// changed since it last ran under the same key and git directory; otherwise its last
// output is returned, without starting a git. Tests that check after every case that no
// ref moved read the same refs hundreds of times, and on the 2-core machine what tier 1
// spends is mostly processes started (docs/testing.md).
//
// Those files are the loose refs and packed-refs (files), or reftable's tables.list,
// which names every table and changes with each commit, the tables themselves never
// being rewritten (reftable); the config, which names the backend; and HEAD. Equal
// contents hold the same refs. A store of more than storeFilesMax files is not read:
// read runs.
func RefsRead(key, gitDir, store string, read func() string) string {
	snap, ok := storeSnapshot(gitDir, store)
	if !ok {
		return read()
	}
	k := gitDir + "\x00" + key
	if v, ok := refsRead.Load(k); ok && v.(refsReading).snap == snap {
		return v.(refsReading).out
	}
	out := read()
	// A store written while read ran is read again next time: the snapshot from
	// after the read is stored only if it equals the one from before.
	if after, ok := storeSnapshot(gitDir, store); ok && after == snap {
		refsRead.Store(k, refsReading{snap, out})
	}
	return out
}

// refsRead holds RefsRead's last output for each key and git directory, with the
// snapshot of the store it was read from.
var refsRead sync.Map

type refsReading struct{ snap, out string }

// storeFilesMax bounds the files storeSnapshot reads.
const storeFilesMax = 2000

// storeSnapshot is the content of every file git reads refs from in gitDir (and in
// store, when set), with its path: false when there are more than storeFilesMax.
func storeSnapshot(gitDir, store string) (string, bool) {
	var b strings.Builder
	files := 0
	add := func(path string) bool {
		data, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			return false
		}
		files++
		b.WriteString(path)
		b.WriteByte(0)
		if err == nil {
			b.WriteByte('+') // present, even when empty
			b.Write(data)
		}
		b.WriteByte(0)
		return files <= storeFilesMax
	}
	if !add(filepath.Join(gitDir, "config")) {
		return "", false
	}
	for _, dir := range []string{gitDir, store} {
		if dir == "" {
			continue
		}
		if !add(filepath.Join(dir, "HEAD")) || !add(filepath.Join(dir, "packed-refs")) || !add(filepath.Join(dir, "reftable", "tables.list")) {
			return "", false
		}
		err := filepath.WalkDir(filepath.Join(dir, "refs"), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if os.IsNotExist(err) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				b.WriteString(path + "/\x00")
				return nil
			}
			if !add(path) {
				return fs.SkipAll
			}
			return nil
		})
		if err != nil || files > storeFilesMax {
			return "", false
		}
	}
	return b.String(), true
}
