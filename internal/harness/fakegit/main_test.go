package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSubcommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		sub  string
		rest string
	}{
		{[]string{"update-ref", "-d", "refs/heads/x"}, "update-ref", "-d refs/heads/x"},
		{[]string{"-C", "/r", "-c", "a=b", "update-ref", "--stdin"}, "update-ref", "--stdin"},
		{[]string{"--git-dir=/r/.git", "--no-pager", "rev-parse", "HEAD"}, "rev-parse", "HEAD"},
		{[]string{"--git-dir", "/r/.git", "config", "-l"}, "config", "-l"},
		{[]string{"--version"}, "", ""},
	} {
		sub, rest := subcommand(tc.args)
		if sub != tc.sub || strings.Join(rest, " ") != tc.rest {
			t.Errorf("subcommand(%q) = %q, %q; want %q, %q", tc.args, sub, rest, tc.sub, tc.rest)
		}
	}
}

// TestConverse: answers come as their commands arrive; the failing verb ends the
// conversation, and anything the capture printed later comes then. The input record
// holds the commands taken in, up to the failing one, and nothing read ahead.
func TestConverse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, verb, answers, want, took string
		sep                                 byte
	}{
		{"prepare", "start\nupdate refs/heads/x A\nprepare\ncommit\n", "prepare", "start: ok\n", "start: ok\n",
			"start\nupdate refs/heads/x A\nprepare\n", '\n'},
		{"commit", "start\nupdate refs/heads/x A\ncommit\n", "commit", "start: ok\n", "start: ok\n",
			"start\nupdate refs/heads/x A\ncommit\n", '\n'},
		{"nul", "start\x00update refs/heads/x\x00A\x00\x00prepare\x00", "prepare", "start: ok\n", "start: ok\n",
			"start\x00update refs/heads/x\x00A\x00\x00prepare\x00", 0},
		{"eof first", "start\n", "prepare", "start: ok\nlater: ok\n", "start: ok\nlater: ok\n", "start\n", '\n'},
	} {
		var out strings.Builder
		w := bufio.NewWriter(&out)
		in := newInput(strings.NewReader(tc.in), 1)
		in.path = filepath.Join(t.TempDir(), "1") // keep a record
		if err := converse(in, w, tc.sep, tc.verb, []byte(tc.answers)); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		w.Flush()
		if out.String() != tc.want {
			t.Errorf("%s: wrote %q, want %q", tc.name, out.String(), tc.want)
		}
		if in.took.String() != tc.took {
			t.Errorf("%s: took in %q, want %q", tc.name, in.took.String(), tc.took)
		}
	}
}

// TestCount: concurrent invocations get distinct ordinals 1..n.
func TestCount(t *testing.T) {
	path := filepath.Join(t.TempDir(), "count")
	t.Setenv("REFRETRY_FAKEGIT_STATE", path)
	const n = 64
	got := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k, err := count()
			if err != nil {
				t.Error(err)
			}
			got[i] = k
		}()
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, k := range got {
		if k < 1 || k > n || seen[k] {
			t.Fatalf("ordinals %v: want each of 1..%d once", got, n)
		}
		seen[k] = true
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != n {
		t.Errorf("counter file: %v, %v", fi, err)
	}
}
