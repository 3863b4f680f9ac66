package report

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/ci"
	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/platform"
	"github.com/refretry/refretry/retry"
)

// fail is a failure as a command's classifier gives it, with a lock when lock is
// set (seen a second old, held by pid).
func fail(class, line, lock, advice string, pid int, unseen bool) *failure.Error {
	f := &failure.Error{Command: "update-ref", Class: failure.Class(class), ExitCode: 128, Message: line, Advice: advice}
	if lock != "" {
		f.Lock = &failure.Lock{Path: lock, Age: time.Second, PID: pid, HolderUnseen: unseen}
	}
	return f
}

var contention = fail("lock-contention", "cannot lock references", "/r/.git/reftable/tables.list.lock", "", 0, false)

func noRefs(t *testing.T) func() Refs {
	return func() Refs {
		t.Error("refs asked for in plain mode")
		return Refs{}
	}
}

// TestPlainLines: in plain mode the lines are refretry's usual ones, attempts are
// numbered across the whole run (a --stdin session has one budget per transaction),
// and nothing else is written or looked up.
func TestPlainLines(t *testing.T) {
	var stderr strings.Builder
	configured := 0
	l := Start(Config{Command: "update-ref", Stderr: &stderr, Git: "git",
		Configured: func(read bool) (ci.Format, string) {
			if read {
				t.Error("git config read in plain mode")
			}
			configured++
			return "", ""
		},
		Version: func() string { t.Error("git version asked for in plain mode"); return "" }})
	if l.Eager() {
		t.Fatal("plain mode is eager")
	}
	// Two budgets, each starting its numbering at 1.
	l.Attempt(retry.Attempt{Number: 1, Err: contention, Delay: 12 * time.Millisecond})
	l.Attempt(retry.Attempt{Number: 2, Final: true})
	l.Attempt(retry.Attempt{Number: 1, Err: contention, Delay: 3 * time.Millisecond})
	ex := &retry.ExhaustedError{Attempts: 2, Elapsed: 1500 * time.Millisecond, Reason: retry.ReasonAttempts, Err: contention}
	l.Attempt(retry.Attempt{Number: 2, Err: contention, Final: true})
	l.Finish(128, ex, noRefs(t))
	want := "refretry: attempt 1 failed (lock-contention on /r/.git/reftable/tables.list.lock); retrying in 12ms\n" +
		"refretry: attempt 3 failed (lock-contention on /r/.git/reftable/tables.list.lock); retrying in 3ms\n" +
		"refretry: gave up after 4 attempts in 1.5s (max-attempts); last failure: lock-contention on /r/.git/reftable/tables.list.lock\n"
	if stderr.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", stderr.String(), want)
	}
	if configured != 1 {
		t.Errorf("git config consulted %d times, want once (at the first attempt)", configured)
	}
}

// TestFinalLines: refretry's own line about each way a run can end, after git's.
func TestFinalLines(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&gitexec.StartError{Err: errors.New("no such file")}, "refretry: cannot run git (/opt/git): no such file\n"},
		{&retry.ResolveError{Err: errors.New("bad value")}, "refretry: not retried: bad value\n"},
		{fail("stale-lock", "x", "", "stale lock /r/x.lock: old", 0, false), "refretry: stale lock /r/x.lock: old\n"},
		{fail("conflict", "is at a but expected b", "", "", 0, false), ""},
		{fmt.Errorf("writing standard output: %w", errors.New("broken pipe")), "refretry: writing standard output: broken pipe\n"},
	}
	for _, tc := range cases {
		var stderr strings.Builder
		l := Start(Config{Command: "update-ref", Stderr: &stderr, Git: "/opt/git"})
		l.Finish(128, tc.err, noRefs(t))
		if stderr.String() != tc.want {
			t.Errorf("%v: %q, want %q", tc.err, stderr.String(), tc.want)
		}
	}
}

// TestUnseenHolder: a run that gave up waiting for a lock whose holder pid is not
// running here says, after the gave-up line, why the lock was still waited for; the
// attempt records say the holder was unseen, and the summary carries the same advice.
func TestUnseenHolder(t *testing.T) {
	held := fail("lock-contention", "Unable to create '/r/x.lock': File exists.", "/r/x.lock",
		"lock /r/x.lock (age 1s, holder pid 4242): its holder, process 4242, is not running here, but …", 4242, true)
	ex := &retry.ExhaustedError{Attempts: 1, Elapsed: time.Second, Reason: retry.ReasonDeadline, Err: held}

	var plain strings.Builder
	l := Start(Config{Command: "update-ref", Stderr: &plain})
	l.Attempt(retry.Attempt{Number: 1, Err: held, Final: true})
	l.Finish(128, ex, noRefs(t))
	want := "refretry: gave up after 1 attempt in 1s (deadline); last failure: lock-contention on /r/x.lock\n" +
		"refretry: " + held.Advice + "\n"
	if plain.String() != want {
		t.Errorf("stderr:\n%s\nwant:\n%s", plain.String(), want)
	}

	var logged strings.Builder
	l = Start(Config{Command: "update-ref", Stderr: &logged, Format: "json"})
	l.Attempt(retry.Attempt{Number: 1, Err: held, Final: true})
	l.Finish(128, ex, func() Refs { return Refs{Updates: -1} })
	out := logged.String()
	ns := ""
	if platform.OwnPIDNamespace() {
		ns = `,"pid_namespace":"container"`
	}
	for _, want := range []string{`"holder_pid":4242,"holder_unseen":true` + ns + `,"final":true`, `"advice":"lock /r/x.lock (age 1s`} {
		if !strings.Contains(out, want) {
			t.Errorf("records lack %q:\n%s", want, out)
		}
	}
	if strings.Contains(plainLines(out), "refretry: lock") {
		t.Errorf("a plain advice line beside json records:\n%s", out)
	}
}

// plainLines are the lines of out that are not JSON records.
func plainLines(out string) string {
	var b strings.Builder
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "{") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// TestRecordsNameCommand: with a format asked for, the records and lines name the
// command, carry the refs and the version, and git's stderr goes through the relay.
func TestRecordsNameCommand(t *testing.T) {
	for _, command := range []string{"update-ref", "push"} {
		var stderr strings.Builder
		l := Start(Config{Command: command, Stderr: &stderr, Format: "json", Version: func() string { return "2.55.0" }})
		if !l.Eager() {
			t.Fatal("a format asked for is not eager")
		}
		l.Attempt(retry.Attempt{Number: 1, Err: contention, Delay: time.Millisecond})
		fmt.Fprintln(l.Stderr(), "error: git's own line")
		l.Attempt(retry.Attempt{Number: 2, Final: true})
		l.Finish(0, nil, func() Refs { return Refs{Updates: 1, Names: []string{"refs/heads/x"}, Backend: "reftable"} })
		out := stderr.String()
		for _, want := range []string{
			`"command":"` + command + `","attempt":1`, `"command":"` + command + `","attempt":2`,
			`"command":"` + command + `","result":"success"`, `"refs":["refs/heads/x"]`,
			`"git_version":"2.55.0","ref_backend":"reftable"`, "error: git's own line\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", command, want, out)
			}
		}
		if strings.Contains(out, "refretry: attempt") {
			t.Errorf("%s: plain lines beside json records:\n%s", command, out)
		}
	}
}
