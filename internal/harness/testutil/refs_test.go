package testutil

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestRefsRead: RefsRead starts no git while the store is as it was, and reads again
// after every kind of write (a loose ref, packed-refs, a deletion, reftable's tables),
// in the repository and in a store outside it; a store too big to snapshot is read
// every time.
func TestRefsRead(t *testing.T) {
	cur := NewGit(t)
	repos := []struct {
		name string
		make func(t *testing.T) *Repo
	}{
		{"files", func(t *testing.T) *Repo { return NewRepo(t, SystemGit(t), "files") }},
		{"reftable", func(t *testing.T) *Repo { return NewRepo(t, cur, "reftable") }},
		{"files outside", func(t *testing.T) *Repo { return NewRepoOutside(t, cur, "files") }},
		{"reftable outside", func(t *testing.T) *Repo { return NewRepoOutside(t, cur, "reftable") }},
	}
	for _, tc := range repos {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.make(t)
			reads := 0
			list := func() string {
				return RefsRead("test", r.GitDir, r.Store, func() string {
					reads++
					return r.Run("for-each-ref", "--format=%(refname) %(objectname)")
				})
			}
			second := r.NewCommit("second")
			steps := []struct {
				what  string
				write []string // a git command that writes, or nil
			}{
				{"first read", nil},
				{"unchanged", nil},
				{"a ref created", []string{"update-ref", "refs/heads/a", r.Commit}},
				{"unchanged after the write", nil},
				{"a ref moved", []string{"update-ref", "refs/heads/a", second}},
				{"refs packed", []string{"pack-refs", "--all"}},
				{"a packed ref moved", []string{"update-ref", "refs/heads/a", r.Commit}},
				{"a ref deleted", []string{"update-ref", "-d", "refs/heads/a"}},
				{"unchanged at the end", nil},
			}
			want := 0
			for _, s := range steps {
				if s.what == "refs packed" && r.Backend == "reftable" {
					continue // reftable compacts the tables at each write already: pack-refs may find nothing to do
				}
				if s.write != nil {
					r.Run(s.write...)
					want++
				} else if s.what == "first read" {
					want++
				}
				got := list()
				if direct := r.Run("for-each-ref", "--format=%(refname) %(objectname)"); got != direct {
					t.Errorf("%s: RefsRead gave\n%s\nfor-each-ref gives\n%s", s.what, got, direct)
				}
				if reads != want {
					t.Errorf("%s: read %d times, want %d", s.what, reads, want)
				}
				reads = want
			}
		})
	}

	t.Run("too many files", func(t *testing.T) {
		r := NewRepo(t, SystemGit(t), "files")
		var b strings.Builder
		for i := range storeFilesMax + 1 {
			fmt.Fprintf(&b, "create refs/heads/many/%d %s\n", i, r.Commit)
		}
		cmd := exec.Command(r.Git.Path, "update-ref", "--stdin")
		cmd.Dir, cmd.Env, cmd.Stdin = r.Dir, r.Env, strings.NewReader(b.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("update-ref: %v\n%s", err, out)
		}
		reads := 0
		for range 2 {
			RefsRead("test", r.GitDir, "", func() string { reads++; return "" })
		}
		if reads != 2 {
			t.Errorf("%d loose refs: read %d times in 2 calls, want 2", storeFilesMax+1, reads)
		}
	})
}
