// Package gitexec builds every git process refretry starts, so that all of them get the
// same environment and the same termination behaviour.
package gitexec

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// WaitDelay bounds how long Wait waits for a git that ignored SIGTERM, and for its
// output pipes to close, before giving up on it.
const WaitDelay = 10 * time.Second

// Env returns env with LC_ALL=C set and LANGUAGE removed, so that git's messages are
// untranslated (LC_ALL=C makes glibc ignore LANGUAGE; removing it is belt and braces).
// Everything else the caller had (GIT_DIR, GIT_CONFIG_PARAMETERS, hooks' variables)
// is kept.
func Env(env []string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if strings.HasPrefix(kv, "LC_ALL=") || strings.HasPrefix(kv, "LANGUAGE=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "LC_ALL=C")
}

// Path is the git a caller configured, git on PATH when it named none: every Runner's
// Git field and replay's Repo mean this by "".
func Path(git string) string {
	if git == "" {
		return "git"
	}
	return git
}

// Command returns a git command. Cancelling ctx sends SIGTERM, not SIGKILL: git removes
// its .lock files on SIGTERM and leaves them behind on SIGKILL.
func Command(ctx context.Context, git string, dirs []string, env []string, args ...string) *exec.Cmd {
	full := make([]string, 0, 2*len(dirs)+len(args))
	for _, d := range dirs {
		full = append(full, "-C", d)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, git, full...)
	cmd.Env = Env(env)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = WaitDelay
	return cmd
}

// ExitCode returns the exit status a shell would report for a finished process: its
// exit code, or 128+n for death by signal n. ok is false when the process never ran.
func ExitCode(ps *os.ProcessState) (code int, ok bool) {
	if ps == nil {
		return 0, false
	}
	if ws, isWS := ps.Sys().(syscall.WaitStatus); isWS && ws.Signaled() {
		return 128 + int(ws.Signal()), true
	}
	return ps.ExitCode(), true
}

// WithConfig returns env with git configuration added through GIT_CONFIG_COUNT (git
// 2.31+), after any entries the caller already set there. Like `git -c`, it beats the
// configuration files; a caller's own `git -c` (GIT_CONFIG_PARAMETERS) still wins. If
// the caller's GIT_CONFIG_COUNT is malformed, env is returned unchanged and git
// reports the error as it would have anyway.
func WithConfig(env []string, kv ...[2]string) []string {
	count := 0
	out := make([]string, 0, len(env)+2*len(kv)+1)
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "GIT_CONFIG_COUNT="); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return env
			}
			count = n
			continue
		}
		out = append(out, e)
	}
	for i, p := range kv {
		out = append(out,
			fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", count+i, p[0]),
			fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", count+i, p[1]))
	}
	return append(out, fmt.Sprintf("GIT_CONFIG_COUNT=%d", count+len(kv)))
}

// FirstLockWait is how long git itself waits for a lock in a first attempt: an
// update's own (transaction doubles it on each later attempt) and a group commit's.
const FirstLockWait = time.Second

// WithLockWait returns env with git's own lock waits (reftable.lockTimeout,
// core.filesRefLockTimeout, core.packedRefsTimeout) all set to d, through
// GIT_CONFIG_COUNT: the caller's arguments, and git's messages, stay the caller's.
func WithLockWait(env []string, d time.Duration) []string {
	ms := strconv.FormatInt(d.Milliseconds(), 10)
	return WithConfig(env,
		[2]string{"reftable.lockTimeout", ms},
		[2]string{"core.filesRefLockTimeout", ms},
		[2]string{"core.packedRefsTimeout", ms})
}

// Version is git's version as `git version` prints it ("2.55.0"), "" when it cannot
// be learnt. It asks each git (its path, and PATH when the path is a bare name) once
// per process: the commands ask it several times in one run.
func Version(ctx context.Context, git string, env []string) string {
	key := git
	if !strings.ContainsRune(git, os.PathSeparator) {
		key += "\x00" + Getenv(env, "PATH")
	}
	if v, ok := versions.Load(key); ok {
		return v.(string)
	}
	out, err := Command(ctx, git, nil, env, "version").Output()
	if err != nil {
		return ""
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "git version ")
	versions.Store(key, v)
	return v
}

// versions are the versions Version learnt, by git.
var versions sync.Map

// AtLeast reports whether version, as Version gives it ("2.55.0", "2.45.0.windows.1"),
// is major.minor or later; false when it cannot be read.
func AtLeast(version string, major, minor int) bool {
	var ma, mi int
	if n, _ := fmt.Sscanf(version, "%d.%d", &ma, &mi); n != 2 {
		return false
	}
	return ma > major || ma == major && mi >= minor
}

// CaptureLimit bounds what a [Capped] buffer keeps of one git's output.
const CaptureLimit = 8 << 20

// Capped is a buffer that keeps the first CaptureLimit bytes written to it and
// counts the rest as written: for the output of a git whose messages are read, and
// written out once its attempt is known to be the final one.
type Capped struct{ bytes.Buffer }

func (c *Capped) Write(b []byte) (int, error) {
	if room := CaptureLimit - c.Len(); room > 0 {
		c.Buffer.Write(b[:min(len(b), room)])
	}
	return len(b), nil
}

// Captured is a finished git: its exit code and what it printed, each stream kept up
// to CaptureLimit.
type Captured struct {
	Code           int
	Stdout, Stderr []byte
}

// Capture runs cmd with its stdout and stderr captured. A git that could not be started
// gives exit code 128 and a *StartError. A cmd.Stderr set by the caller gets git's
// stderr too, as git writes it; it must accept every write (its failure would stop
// the capture).
func Capture(cmd *exec.Cmd) (Captured, error) {
	var out, errOut Capped
	cmd.Stdout = &out
	if also := cmd.Stderr; also != nil {
		cmd.Stderr = io.MultiWriter(&errOut, also)
	} else {
		cmd.Stderr = &errOut
	}
	runErr := cmd.Run()
	code, ran := ExitCode(cmd.ProcessState)
	if !ran {
		return Captured{Code: 128}, &StartError{Err: runErr}
	}
	return Captured{Code: code, Stdout: out.Bytes(), Stderr: errOut.Bytes()}, nil
}
