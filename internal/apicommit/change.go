package apicommit

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/replay"
)

// Git's modes of tree entries.
const (
	modeFile    = "100644"
	modeExec    = "100755"
	modeLink    = "120000"
	modeGitlink = "160000"
)

// Change is one path whose entry differs between a landing's base and its tree. A
// file-level API (Gitea's, GitLab's, GitHub's GraphQL) takes the changes, not the
// tree.
type Change struct {
	Path             string
	OldMode, NewMode string // "" where the path is absent
	OldOID, NewOID   string
}

// changes lists every path whose entry differs between the commits base and tip: a
// rename is a deletion and an addition.
func changes(ctx context.Context, repo replay.Repo, base, tip string) ([]Change, error) {
	out, err := repo.Command(ctx, repo.Env, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", base, tip).Output()
	if err != nil {
		return nil, fmt.Errorf("listing the changes of %s: %w", replay.Short(tip), err)
	}
	fields := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	var list []Change
	for i := 0; i+1 < len(fields); i += 2 {
		// ":<old mode> <new mode> <old oid> <new oid> <status>", then the path.
		f := strings.Fields(strings.TrimPrefix(fields[i], ":"))
		if len(f) != 5 {
			return nil, fmt.Errorf("git diff-tree said %q", fields[i])
		}
		c := Change{Path: fields[i+1], OldMode: f[0], NewMode: f[1], OldOID: f[2], NewOID: f[3]}
		if strings.Trim(c.OldMode, "0") == "" {
			c.OldMode, c.OldOID = "", ""
		}
		if strings.Trim(c.NewMode, "0") == "" {
			c.NewMode, c.NewOID = "", ""
		}
		list = append(list, c)
	}
	return list, nil
}

// fileAPI is what a file-level API can write besides a regular file's content.
type fileAPI struct {
	name string
	// exec: it writes a file's executable bit (GitLab's chmod); keepsExec: an update
	// of an executable keeps its bit (Gitea's), though it cannot set or clear one.
	exec, keepsExec bool
}

// refuse is why changes cannot be written through api, "" when they can: a symbolic
// link or a submodule (which no file-level API writes), an executable bit it cannot
// set, clear or keep. Deletions of anything are fine.
func (api fileAPI) refuse(list []Change) string {
	for _, c := range list {
		var what string
		switch {
		case c.NewMode == "":
		case c.NewMode == modeLink || c.OldMode == modeLink:
			what = "a symbolic link"
		case c.NewMode == modeGitlink || c.OldMode == modeGitlink:
			what = "a submodule"
		case api.exec:
		case c.NewMode == modeExec && c.OldMode == modeExec && api.keepsExec:
		case c.NewMode == modeExec || c.OldMode == modeExec:
			what = "a file's executable bit"
		}
		if what != "" {
			return fmt.Sprintf("%s cannot write %s (%s)", api.name, what, c.Path)
		}
	}
	return ""
}

// refusal is a landing refused before anything was written: exit 1, never retried,
// with what to do in its advice.
func refusal(why string) *failure.Error {
	line := why + "; nothing was written: land this change with git push (refretry push --rebase), or without that entry"
	return &failure.Error{Command: "push", Class: failure.Rejected, ExitCode: 1, Message: line, Advice: line}
}

// blobs reads the content of the blobs oids with one git, by oid.
func blobs(ctx context.Context, repo replay.Repo, oids []string) (map[string][]byte, error) {
	got := map[string][]byte{}
	if len(oids) == 0 {
		return got, nil
	}
	cmd := repo.Command(ctx, repo.Env, "cat-file", "--batch")
	cmd.Stdin = strings.NewReader(strings.Join(oids, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("reading %d blobs: %w", len(oids), err)
	}
	for _, oid := range oids {
		header, rest, _ := bytes.Cut(out, []byte("\n"))
		f := strings.Fields(string(header))
		if len(f) != 3 || f[1] != "blob" {
			return nil, fmt.Errorf("reading blob %s: git cat-file said %q", oid, header)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size+1 > len(rest) {
			return nil, fmt.Errorf("reading blob %s: git cat-file said %q", oid, header)
		}
		got[oid], out = rest[:size], rest[size+1:]
	}
	return got, nil
}

// newBlobs are the blobs that changes write.
func newBlobs(list []Change) []string {
	var oids []string
	for _, c := range list {
		if c.NewMode != "" {
			oids = append(oids, c.NewOID)
		}
	}
	return oids
}

// lfsPaths are the paths among changes whose attributes in tip's tree send them
// through Git LFS (filter=lfs): a forge that runs an LFS server stores what its
// contents API is given there, and writes a pointer in its place.
func lfsPaths(ctx context.Context, repo replay.Repo, tip string, list []Change) ([]string, error) {
	var paths []string
	for _, c := range list {
		if c.NewMode != "" {
			paths = append(paths, c.Path)
		}
	}
	if len(paths) == 0 {
		return nil, nil
	}
	cmd := repo.Command(ctx, repo.Env, "check-attr", "-z", "--stdin", "--source="+tip, "filter")
	cmd.Stdin = strings.NewReader(strings.Join(paths, "\x00") + "\x00")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("reading the attributes of %d paths: %w", len(paths), err)
	}
	// "<path>\0filter\0<value>\0" for each path.
	f := strings.Split(string(out), "\x00")
	var lfs []string
	for i := 0; i+2 < len(f); i += 3 {
		if f[i+2] == "lfs" {
			lfs = append(lfs, f[i])
		}
	}
	return lfs, nil
}
