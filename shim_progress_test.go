//go:build linux

package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// progressSetup is a client whose main is one commit ahead of its remote (a file of
// a few hundred lines, so that git has objects to count, compress and write), the
// remote's pre-receive hook refusing refs/heads/rejectme with a line of its own, and
// the refs of both, to put back between pushes.
type progressSetup struct {
	c                        *testutil.Repo
	remote                   string
	remoteState, clientState string
}

func newProgressSetup(t *testing.T, g testutil.Git, backend string) progressSetup {
	t.Helper()
	c := testutil.NewRepo(t, g, backend)
	remote := addOrigin(t, c, backend)
	c.Run("--git-dir="+remote, "config", "receive.autogc", "false") // nothing detached writes there after a push
	c.Run("push", "-q", "origin", "main")
	hook := "#!/bin/sh\nwhile read old new ref; do\n\tif [ \"$ref\" = refs/heads/rejectme ]; then echo \"no pushes to rejectme\"; exit 1; fi\ndone\n"
	if err := os.WriteFile(filepath.Join(remote, "hooks", "pre-receive"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "lines.txt"), []byte(strings.Repeat("a line of text\n", 300)), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Run("add", "lines.txt")
	c.Run("commit", "-q", "-m", "lines")
	return progressSetup{c: c, remote: remote, remoteState: refState(c, remote), clientState: refState(c, c.GitDir)}
}

// restore puts the refs of the remote and the client back as they were set up.
func (s progressSetup) restore(t *testing.T) {
	t.Helper()
	restoreRefs(t, s.c, s.remote, s.remoteState)
	restoreRefs(t, s.c, s.c.GitDir, s.clientState)
}

var (
	// throughput is the rate in a meter's drawing, which differs from run to run.
	throughput = regexp.MustCompile(`, \d+(?:\.\d+)? (?:bytes?|[KMG]iB) \| \d+(?:\.\d+)? (?:bytes?|[KMG]iB)/s`)
	// progressLines are the lines git push prints only with progress on (the last
	// drawing of each meter, and pack-objects' two lines).
	progressLines = regexp.MustCompile(`^(?:(?:Enumerating|Counting|Compressing|Writing) objects: |Delta compression using up to |Total \d+ )`)
)

// splitProgress reads git push's stderr as lines, without the drawings a meter
// overwrites ("\r"-ended: how many there are depends on timing) and with the rate
// of a final drawing replaced by "N": the progress lines, and the others. first
// reports whether every progress line comes before every other line.
func splitProgress(stderr string) (progress, rest []string, first bool) {
	var lines []string
	line := ""
	for _, c := range stderr {
		switch c {
		case '\r':
			line = ""
		case '\n':
			lines = append(lines, line)
			line = ""
		default:
			line += string(c)
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	first = true
	for _, l := range lines {
		if progressLines.MatchString(l) {
			progress = append(progress, throughput.ReplaceAllString(l, ", N | N/s"))
			first = first && len(rest) == 0
		} else {
			rest = append(rest, l)
		}
	}
	return progress, rest, first
}

// TestShimPushProgressSameAsGit: `git push` with --progress through the shim gives
// what git gives for the same push (the remote's and the client's refs put back in
// between): the same exit code and stdout; on stderr, the same final line of each
// meter and the same pack-objects lines, each once, in git's order, and the same other
// lines, byte for byte, in git's order. Not compared: the drawings a meter overwrites
// ("\r"), and a meter's rate. The shim writes every progress line before the first
// other line (progress is written as it comes, the rest after the attempt), so in a
// rejection the server's line follows "Total", as it may or may not in git's own.
// -q and --no-progress give no progress, as git to a pipe gives none.
func TestShimPushProgressSameAsGit(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			s := newProgressSetup(t, bc.git, bc.backend)
			shimGit, env := shimSetup(t, s.c)
			cases := []struct {
				args     []string
				code     int
				progress bool
			}{
				{[]string{"push", "--progress", "origin", "main"}, 0, true},
				{[]string{"push", "--progress", "-q", "origin", "main"}, 0, true},
				{[]string{"push", "origin", "main", "--porcelain", "--progress"}, 0, true},
				{[]string{"push", "--progress", "origin", "main:rejectme"}, 1, true},
				{[]string{"push", "--progress", "--porcelain", "origin", "main:rejectme"}, 1, true},
				{[]string{"push", "-q", "origin", "main"}, 0, false},
				{[]string{"push", "--no-progress", "origin", "main:rejectme"}, 1, false},
			}
			for _, tc := range cases {
				name := strings.Join(tc.args, " ")
				s.restore(t)
				want := runCmd(t, s.c.Dir, env, "", s.c.Git.Path, tc.args...)
				s.restore(t)
				got := runCmd(t, s.c.Dir, env, "", shimGit, tc.args...)
				s.restore(t)
				if want.code != tc.code || got.code != want.code || got.stdout != want.stdout {
					t.Errorf("%s: shim exit %d, git %d (want %d); stdout:\n%q\ngit:\n%q", name, got.code, want.code, tc.code, got.stdout, want.stdout)
				}
				wantProgress, wantRest, _ := splitProgress(want.stderr)
				gotProgress, gotRest, first := splitProgress(got.stderr)
				if (len(wantProgress) > 0) != tc.progress {
					t.Errorf("%s: git's progress lines %q, want some: %v", name, wantProgress, tc.progress)
				}
				if !slices.Equal(gotProgress, wantProgress) {
					t.Errorf("%s: progress lines through the shim:\n%q\ngit:\n%q", name, gotProgress, wantProgress)
				}
				if !slices.Equal(gotRest, wantRest) {
					t.Errorf("%s: other lines through the shim:\n%q\ngit:\n%q", name, gotRest, wantRest)
				}
				if !first {
					t.Errorf("%s: a line before the progress through the shim:\n%q", name, got.stderr)
				}
			}
		})
	}
}

// runOnTerminal runs path with args in dir with a pseudo-terminal as its stderr and
// returns what reached the terminal, and the exit code.
func runOnTerminal(t *testing.T, dir string, env []string, path string, args ...string) (string, int) {
	t.Helper()
	master, pts := testutil.OpenPTY(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, io.Discard, pts
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() {
		defer close(read)
		io.Copy(&screen, master) // ends with EIO once nothing holds the terminal
	}()
	err := cmd.Run()
	pts.Close()
	<-read
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %q: %v", path, args, err)
	}
	return screen.String(), code
}

// TestShimPushProgressTerminal: with a terminal as stderr, `git push` through the
// shim, and `refretry push`, show git's progress where git does: by default, not with
// -q or --no-progress, and with --progress even after -q.
func TestShimPushProgressTerminal(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			s := newProgressSetup(t, bc.git, bc.backend)
			shimGit, env := shimSetup(t, s.c)
			cases := []struct {
				args []string
				want bool
			}{
				{[]string{"push", "origin", "main"}, true},
				{[]string{"push", "-q", "origin", "main"}, false},
				{[]string{"push", "--no-progress", "origin", "main"}, false},
				{[]string{"push", "-q", "--progress", "origin", "main"}, true},
			}
			for _, tc := range cases {
				name := strings.Join(tc.args, " ")
				s.restore(t)
				gitScreen, gitCode := runOnTerminal(t, s.c.Dir, env, s.c.Git.Path, tc.args...)
				s.restore(t)
				shimScreen, shimCode := runOnTerminal(t, s.c.Dir, env, shimGit, tc.args...)
				s.restore(t)
				if gitCode != 0 || shimCode != 0 {
					t.Fatalf("%s: exit %d through the shim, git %d:\n%q\ngit:\n%q", name, shimCode, gitCode, shimScreen, gitScreen)
				}
				if got := strings.Contains(gitScreen, "Writing objects: 100%"); got != tc.want {
					t.Errorf("%s: git showed progress: %v, the test expects %v:\n%q", name, got, tc.want, gitScreen)
				}
				if got := strings.Contains(shimScreen, "Writing objects: 100%"); got != tc.want {
					t.Errorf("%s: progress through the shim: %v, want %v (as git):\n%q", name, got, tc.want, shimScreen)
				}
				ownScreen, ownCode := runOnTerminal(t, s.c.Dir, append(slices.Clip(s.c.Env), "REFRETRY_GIT="+s.c.Git.Path), binary, tc.args...)
				s.restore(t)
				if got := strings.Contains(ownScreen, "Writing objects: 100%"); ownCode != 0 || got != tc.want {
					t.Errorf("refretry %s: exit %d, progress %v, want 0 and %v (as git):\n%q", name, ownCode, got, tc.want, ownScreen)
				}
			}
		})
	}
}
