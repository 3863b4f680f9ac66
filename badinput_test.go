package main

// The reliability suite's bad-input table (docs/reliability.md): malformed input through
// --stdin and the one-ref forms must give exactly git's stdout, stderr and exit code,
// in one attempt, with no ref changed, on git 2.39 and 2.55 and both ref backends.

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/platform"

	"github.com/refretry/refretry/internal/harness/testutil"
)

type badInput struct {
	name  string
	stdin string
	args  []string
}

// badInputs are the malformed invocations for repository r (a commit, its tree and a
// second commit).
func badInputs(r *testutil.Repo, tree, other string) []badInput {
	c := r.Commit
	zero := strings.Repeat("0", 40)
	junk := make([]byte, 4096)
	rand.New(rand.NewSource(7)).Read(junk)
	var big strings.Builder
	for i := 0; big.Len() < 5<<20; i++ { // past the spool's memory limit
		fmt.Fprintf(&big, "create refs/heads/big/%07d %s\n", i, c)
	}
	stdin := []string{"--stdin"}
	z := []string{"--stdin", "-z"}
	return []badInput{
		// Framing.
		{"crlf", "update refs/heads/x " + c + "\r\n", stdin},
		{"crlf mid batch", "create refs/heads/a " + c + "\nupdate refs/heads/x " + c + "\r\ncreate refs/heads/b " + c + "\n", stdin},
		{"no final newline", "update refs/heads/x " + c, stdin},
		{"no final newline after good lines", "create refs/heads/a " + c + "\ncreate refs/heads/b " + c, stdin},
		{"double space is a CAS delete", "update refs/heads/x  " + c + "\n", stdin},
		{"double space on existing ref", "update refs/heads/main  " + other + "\n", stdin},
		{"leading space", " update refs/heads/x " + c + "\n", stdin},
		{"empty line", "create refs/heads/a " + c + "\n\n", stdin},
		{"trailing space (empty old: must not exist)", "update refs/heads/main " + c + " \n", stdin},
		{"extra argument", "update refs/heads/x " + c + " " + zero + " extra\n", stdin},
		{"tab separator", "update\trefs/heads/x\t" + c + "\n", stdin},
		// Quoting.
		{"unterminated quote", "update \"refs/heads/x " + c + "\n", stdin},
		{"junk after quote", "update \"refs/heads/x\"y " + c + "\n", stdin},
		{"bad escape", "update \"refs/heads/\\q\" " + c + "\n", stdin},
		{"quoted bad name", "update \"refs/heads/a b\" " + c + "\n", stdin},
		// Names.
		{"dotdot name", "create refs/heads/a..b " + c + "\n", stdin},
		{"lock suffix name", "create refs/heads/a.lock " + c + "\n", stdin},
		{"trailing slash", "create refs/heads/a/ " + c + "\n", stdin},
		{"control character", "create refs/heads/a\x01b " + c + "\n", stdin},
		{"bad name single", "", []string{"refs/heads/a..b", c}},
		{"star name single", "", []string{"refs/heads/a*", c}},
		{"bad name delete", "", []string{"-d", "refs/heads/a..b", c}},
		// Objects.
		{"unknown object", "create refs/heads/x " + strings.Repeat("1", 40) + "\n", stdin},
		{"unknown object single", "", []string{"refs/heads/x", strings.Repeat("1", 40)}},
		{"tree to a branch", "create refs/heads/x " + tree + "\n", stdin},
		{"tree to a branch single", "", []string{"refs/heads/x", tree}},
		{"short unknown oid", "create refs/heads/x 1234567\n", stdin},
		{"not hex", "create refs/heads/x " + strings.Repeat("g", 40) + "\n", stdin},
		{"not a valid SHA1", "", []string{"refs/heads/x", "no-such-rev"}},
		{"not a valid old SHA1", "", []string{"refs/heads/x", c, "no-such-rev"}},
		{"zero create", "create refs/heads/x " + zero + "\n", stdin},
		{"zero delete old", "delete refs/heads/main " + zero + "\n", stdin},
		// Duplicates.
		{"duplicate ref", "create refs/heads/x " + c + "\nupdate refs/heads/x " + other + "\n", stdin},
		{"duplicate ref -z", "create refs/heads/x\x00" + c + "\x00update refs/heads/x\x00" + other + "\x00\x00", z},
		{"ref and its child", "create refs/heads/d " + c + "\ncreate refs/heads/d/e " + c + "\n", stdin},
		// Commands and states.
		{"unknown command", "frobnicate refs/heads/x\n", stdin},
		{"update without arguments", "update\n", stdin},
		{"option unknown", "option frob\n", stdin},
		{"start twice", "start\nstart\n", stdin},
		{"command after prepare", "start\ncreate refs/heads/x " + c + "\nprepare\ncreate refs/heads/y " + c + "\n", stdin},
		{"command after commit", "start\ncommit\ncreate refs/heads/x " + c + "\n", stdin},
		{"start with argument", "start now\n", stdin},
		// Size and junk.
		{"oversized batch, bad last line", big.String() + "create refs/heads/a..b " + c + "\n", stdin},
		{"binary junk", string(junk), stdin},
		{"binary junk -z", string(junk), z},
		{"nul in text mode", "create refs/heads/x\x00" + c + "\x00", stdin},
		// -z misuse.
		{"-z with text input", "create refs/heads/x " + c + "\n", z},
		{"-z missing field", "update refs/heads/x\x00" + c, z},
		{"-z without --stdin", "", []string{"-z", "refs/heads/x", c}},
		{"-z and -d", "", []string{"-z", "-d", "refs/heads/main"}},
		// Usage.
		{"--stdin with arguments", "", []string{"--stdin", "refs/heads/x"}},
		{"-d with --stdin", "", []string{"-d", "--stdin"}},
		{"empty message", "", []string{"-m", "", "refs/heads/x", c}},
		{"unknown option", "", []string{"--frobnicate", "refs/heads/x", c}},
		{"too many arguments", "", []string{"refs/heads/x", c, c, c}},
		{"one argument", "", []string{"refs/heads/x"}},
		{"batch-updates without stdin", "", []string{"--batch-updates", "refs/heads/x", c}},
	}
}

// TestBadInput runs every bad input through git on an identical copy of the repository
// and through refretry: stdout, stderr and exit code must match byte for byte (paths to
// the copy are rewritten), refretry must run git's update-ref exactly once and add no
// line of its own, and no ref may change in either repository.
func TestBadInput(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			tree := r.Run("rev-parse", "HEAD^{tree}")
			other := r.NewCommit("second")
			r.Run("update-ref", "refs/heads/main", r.Commit) // main back at the first commit
			// A git that counts its update-ref runs, for refretry to use.
			counted := *r
			dir := t.TempDir()
			count := filepath.Join(dir, "update-ref-runs")
			counted.Git.Path = filepath.Join(dir, "git")
			script := fmt.Sprintf("#!/bin/sh\n[ \"$1\" = update-ref ] && echo run >> %s\nexec %s \"$@\"\n", platform.ShellQuote(count), platform.ShellQuote(bc.git.Path))
			if err := os.WriteFile(counted.Git.Path, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			c := r.Clone()
			before := r.Refs("refs/")
			for _, tc := range badInputs(r, tree, other) {
				os.Remove(count)
				want := sameDir(runIn(t, c, tc.stdin, "git", tc.args...), c, r)
				got := runIn(t, &counted, tc.stdin, "refretry", tc.args...)
				if want.code == 0 {
					t.Errorf("%s: git accepted it; not a bad input (stdout %q)", tc.name, want.stdout)
				}
				if got != want {
					t.Errorf("%s: refretry differs from git\n got: %q %q %d\nwant: %q %q %d",
						tc.name, got.stdout, got.stderr, got.code, want.stdout, want.stderr, want.code)
				}
				if strings.Contains(got.stderr, "refretry:") {
					t.Errorf("%s: refretry added a line: %q", tc.name, got.stderr)
				}
				if runs, _ := os.ReadFile(count); !bytes.Equal(runs, []byte("run\n")) {
					t.Errorf("%s: git update-ref ran %d times, want once", tc.name, bytes.Count(runs, []byte("\n")))
				}
				for _, repo := range []*testutil.Repo{r, c} {
					if after := repo.Refs("refs/"); fmt.Sprint(after) != fmt.Sprint(before) {
						t.Fatalf("%s: refs changed in %s: %v -> %v", tc.name, repo.Dir, before, after)
					}
				}
			}
		})
	}
}
