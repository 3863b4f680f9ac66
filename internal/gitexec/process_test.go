package gitexec

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// sh returns a Spec that runs a shell script as "git" (the Spec's Git is any program).
func sh(t *testing.T, script string) Spec {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("no sh here")
	}
	p, err := exec.LookPath("sh")
	if err != nil {
		t.Skip(err)
	}
	return Spec{Git: p, Env: os.Environ(), Args: []string{"-c", script}}
}

func TestRunSeparatesOutputAndKeepsExitCode(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code, err := Run(context.Background(), sh(t, `echo out; echo err >&2; echo "LC_ALL=$LC_ALL"; exit 7`), &out, &errOut)
	if err != nil || code != 7 {
		t.Fatalf("Run = %d, %v; want 7", code, err)
	}
	if out.String() != "out\nLC_ALL=C\n" || errOut.String() != "err\n" {
		t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
	}
}

// TestRunLargeOutput: more than a pipe holds, on both streams, is read while git
// runs (a reader that waited for git to end would deadlock).
func TestRunLargeOutput(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	script := `i=0; while [ $i -lt 4000 ]; do echo 0123456789012345678901234567890123456789; echo abcdefghijabcdefghijabcdefghij >&2; i=$((i+1)); done`
	code, err := Run(context.Background(), sh(t, script), &out, &errOut)
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	if out.Len() != 4000*41 || errOut.Len() != 4000*31 {
		t.Errorf("read %d and %d bytes, want %d and %d", out.Len(), errOut.Len(), 4000*41, 4000*31)
	}
}

func TestRunDeathBySignal(t *testing.T) {
	t.Parallel()
	code, err := Run(context.Background(), sh(t, `kill -TERM $$`), &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil || code != 128+15 {
		t.Fatalf("Run = %d, %v; want 143", code, err)
	}
}

func TestStartMissingGit(t *testing.T) {
	t.Parallel()
	for _, git := range []string{"refretry-no-such-git", filepath.Join(t.TempDir(), "git")} {
		_, err := Run(context.Background(), Spec{Git: git}, &bytes.Buffer{}, &bytes.Buffer{})
		var se *StartError
		if !errors.As(err, &se) {
			t.Errorf("%s: %v; want a *StartError", git, err)
		}
	}
}

// TestRunCancelSendsSIGTERM: cancelling the context sends git SIGTERM, which it can
// catch to clean up (git removes its lock files).
func TestRunCancelSendsSIGTERM(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var out bytes.Buffer
	s := sh(t, `trap 'echo caught; exit 3' TERM; echo ready; while :; do sleep 0.01; done`)
	done := make(chan struct{})
	var code int
	var err error
	go func() {
		defer close(done)
		code, err = Run(ctx, s, &syncWriter{w: &out, ready: cancel}, &bytes.Buffer{})
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	if err != nil || code != 3 || !strings.Contains(out.String(), "caught") {
		t.Errorf("Run = %d, %v, stdout %q; want the TERM trap's exit 3", code, err, out.String())
	}
}

// syncWriter calls ready after its first write.
type syncWriter struct {
	w     *bytes.Buffer
	ready func()
	once  bool
}

func (s *syncWriter) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	if !s.once {
		s.once = true
		s.ready()
	}
	return n, err
}

// TestRunLeftoverHolderOfPipes: a process git leaves behind that keeps its output
// open does not keep Run waiting forever after git has ended.
func TestRunLeftoverHolderOfPipes(t *testing.T) {
	if testing.Short() {
		t.Skip("waits WaitDelay")
	}
	t.Parallel()
	start := time.Now()
	code, err := Run(context.Background(), sh(t, `(sleep 60 &) ; exit 0`), &bytes.Buffer{}, &bytes.Buffer{})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	if d := time.Since(start); d > WaitDelay+20*time.Second {
		t.Errorf("Run took %v", d)
	}
}
