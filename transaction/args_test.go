package transaction

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestParseArgsLikeGit reads spellings of update-ref's long options (in full,
// abbreviated, negated, doubly negated, ambiguous, unknown, with a value) with
// ParseArgs and with real git 2.39 and 2.55, and wants the same reading: whether the
// options are understood, whether --stdin is on, and whether --batch-updates is.
//
// git is given the options alone and, on stdin, two creates of which the second
// fails (main exists): git refusing the options prints "error: …" and exits 129;
// without --stdin it prints its usage (129, no error line, no operands given); with it,
// the transaction fails (128), or under --batch-updates the first create lands and git
// exits 0.
func TestParseArgsLikeGit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args                     []string
		understood, stdin, batch bool
		since250                 bool // git 2.50's --batch-updates or -0: older gits refuse them
	}{
		{[]string{"--stdin"}, true, true, false, false},
		{[]string{"--std"}, true, true, false, false},
		{[]string{"--s"}, true, true, false, false},
		{[]string{"--stdin", "--no-s"}, true, false, false, false},
		{[]string{"--stdin", "--no-stdin", "--st"}, true, true, false, false},
		{[]string{"--stdin", "--deref"}, true, true, false, false},       // --no-deref negated
		{[]string{"--stdin", "--de"}, true, true, false, false},          // abbreviated
		{[]string{"--stdin", "--no-d"}, true, true, false, false},        // --no-deref abbreviated
		{[]string{"--stdin", "--no-no-deref"}, true, true, false, false}, // negated twice
		{[]string{"--stdin", "--no-no-d"}, true, true, false, false},
		{[]string{"--stdin", "--no-no-"}, true, true, false, false}, // the one option spelled no-x
		{[]string{"--stdin", "--cr"}, true, true, false, false},     // --create-reflog
		{[]string{"--stdin", "--no-create"}, true, true, false, false},
		{[]string{"--stdin", "--end-of-options"}, true, true, false, false},
		{[]string{"--stdin", "--n"}, false, false, false, false},   // every option negated: ambiguous
		{[]string{"--stdin", "--no"}, false, false, false, false},  // the same
		{[]string{"--stdin", "--no-"}, false, false, false, false}, // the same
		{[]string{"--stdin", "--no-no-s"}, false, false, false, false},
		{[]string{"--stdin", "--nosuch"}, false, false, false, false},
		{[]string{"--stdin", "--stdin=yes"}, false, false, false, false}, // takes no value
		{[]string{"--stdin", "--no-d=1"}, false, false, false, false},
		{[]string{"--stdin", "--e"}, false, false, false, false}, // --end-of-options is not abbreviated
		{[]string{"-d"}, true, false, false, false},
		{[]string{"--stdin", "--batch-updates"}, true, true, true, true},
		{[]string{"--stdin", "--b"}, true, true, true, true},
		{[]string{"--stdin", "--batch", "--no-b"}, true, true, false, true},
		{[]string{"--stdin", "-0", "--no-batch-updates"}, true, true, false, true},
	}
	for _, g := range testutil.Gits(t) {
		t.Run(g.Name(), func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, "files")
			stdin := "create refs/heads/probe " + r.Commit + "\ncreate refs/heads/main " + r.Commit + "\n"
			for _, tc := range cases {
				a := ParseArgs(tc.args)
				if a.Understood != tc.understood || a.Understood && (a.Stdin != tc.stdin || a.Batch != tc.batch) {
					t.Errorf("ParseArgs(%q) = %+v, want understood %v stdin %v batch %v", tc.args, a, tc.understood, tc.stdin, tc.batch)
				}
				want := tc
				if tc.since250 && !g.AtLeast(2, 50) {
					want.understood, want.stdin, want.batch = false, false, false
				}
				understood, stdin, batch, out := gitReads(t, r, stdin, tc.args)
				if understood != want.understood || stdin != want.stdin || batch != want.batch {
					t.Errorf("git update-ref %q read understood %v stdin %v batch %v, the test expects %v %v %v\n%s",
						tc.args, understood, stdin, batch, want.understood, want.stdin, want.batch, out)
				}
				if batch {
					r.Run("update-ref", "-d", "refs/heads/probe")
				}
			}
		})
	}
}

// gitReads runs git update-ref with args and stdin in r and says how git read args
// (see TestParseArgsLikeGit), with git's output for a failure message.
func gitReads(t *testing.T, r *testutil.Repo, stdin string, args []string) (understood, readStdin, batch bool, out string) {
	t.Helper()
	cmd := exec.Command(r.Git.Path, append([]string{"update-ref"}, args...)...)
	cmd.Dir, cmd.Env, cmd.Stdin = r.Dir, r.Env, strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run() // an exit code other than 0 is an answer, not a failure
	code, ran := gitexec.ExitCode(cmd.ProcessState)
	if !ran {
		t.Fatalf("git did not run: %v", err)
	}
	out = fmt.Sprintf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	probe := len(r.Refs("refs/heads/probe")) == 1
	switch {
	case code == 129 && strings.HasPrefix(stderr.String(), "error: "):
		return false, false, false, out
	case code == 129 && !probe:
		return true, false, false, out
	case code == 128 && !probe:
		return true, true, false, out
	case code == 0 && probe:
		return true, true, true, out
	}
	t.Fatalf("git update-ref %q: an outcome the test does not know\n%s", args, out)
	return
}
