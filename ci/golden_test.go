package ci

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// fixedID, fixedTime and counting make outputs reproducible.
const fixedID = "01930000-0000-7000-8000-000000000001"

var fixedTime = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// counting is a deterministic stand-in for crypto/rand: 0x00, 0x01, 0x02, …
type counting struct{ n byte }

func (c *counting) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.n
		c.n++
	}
	return len(p), nil
}

// scenario is what the CLI would report for one kind of run: its attempts, git's
// stderr (relayed after the final attempt), and the summary; of update-ref unless
// command says otherwise, run as git by the shim when shim is set.
type scenario struct {
	attempts []Attempt
	stderr   string
	summary  Summary
	command  string
	shim     bool
}

const lock = "/work/repo/.git/refs/heads/main.lock"

var scenarios = map[string]scenario{
	"success-first-try": {
		attempts: []Attempt{{Number: 1, Duration: 7 * time.Millisecond, Final: true}},
		summary: Summary{Result: ResultSuccess, Attempts: 1, Elapsed: 8 * time.Millisecond,
			Updates: 1, Refs: []string{"refs/heads/main"}, GitVersion: "2.55.0", RefBackend: "files"},
	},
	"success-after-retries": {
		attempts: []Attempt{
			{Number: 1, Duration: 1003 * time.Millisecond, ExitCode: 128, Class: "lock-contention",
				Error: "cannot lock ref 'refs/heads/main': Unable to create '" + lock + "': File exists.",
				Lock:  lock, LockAge: 1200 * time.Millisecond, HolderPID: 4242, Delay: 11 * time.Millisecond},
			{Number: 2, Duration: 2004 * time.Millisecond, ExitCode: 128, Class: "lock-contention",
				Error: "cannot lock ref 'refs/heads/main': Unable to create '" + lock + "': File exists.",
				Lock:  lock, LockAge: 3215 * time.Millisecond, HolderPID: 4242, Delay: 19 * time.Millisecond},
			{Number: 3, Duration: 6 * time.Millisecond, Final: true},
		},
		summary: Summary{Result: ResultSuccess, Attempts: 3, Elapsed: 3045 * time.Millisecond,
			Updates: 2, Refs: []string{"refs/heads/main", "refs/tags/v1"}, GitVersion: "2.55.0", RefBackend: "files"},
	},
	// A gatherer's run: several pushes, each final and none failed, nothing retried:
	// no warning.
	"success-several-pushes": {
		attempts: []Attempt{
			{Number: 1, Duration: 31 * time.Millisecond, Final: true},
			{Number: 2, Duration: 12 * time.Millisecond, Final: true},
			{Number: 3, Duration: 45 * time.Millisecond, Final: true},
		},
		summary: Summary{Result: ResultSuccess, Attempts: 3, Elapsed: 912 * time.Millisecond,
			Updates: 1, Refs: []string{"refs/heads/results"}, GitVersion: "2.55.0"},
	},
	"give-up": {
		attempts: []Attempt{
			{Number: 1, Duration: 1001 * time.Millisecond, ExitCode: 128, Class: "lock-contention",
				Error: "cannot lock references", Lock: "/work/repo/.git/reftable/tables.list.lock",
				LockAge: 1100 * time.Millisecond, Delay: 9 * time.Millisecond},
			{Number: 2, Duration: 1990 * time.Millisecond, ExitCode: 128, Class: "lock-contention",
				Error: "cannot lock references", Lock: "/work/repo/.git/reftable/tables.list.lock",
				LockAge: 3100 * time.Millisecond, Final: true},
		},
		stderr: "error: cannot lock references\nfatal: update_ref failed for ref 'refs/heads/main': cannot lock references\n",
		summary: Summary{Result: ResultGaveUp, ExitCode: 128, Attempts: 2, Elapsed: 3002 * time.Millisecond,
			Reason: "deadline", Class: "lock-contention", Error: "cannot lock references",
			Lock: "/work/repo/.git/reftable/tables.list.lock", Updates: 1, Refs: []string{"refs/heads/main"},
			GitVersion: "2.55.0", RefBackend: "reftable"},
	},
	// A lock whose ~pid.lock names a pid not running here, seen from a container: still
	// waited for, as a holder in another container would look the same.
	"give-up-unseen-holder": {
		attempts: []Attempt{
			{Number: 1, Duration: 1002 * time.Millisecond, ExitCode: 128, Class: "lock-contention",
				Error: "cannot lock ref 'refs/heads/main': Unable to create '" + lock + "': File exists.",
				Lock:  lock, LockAge: 1100 * time.Millisecond, HolderPID: 999999, HolderUnseen: true,
				PIDNamespace: "container", Delay: 8 * time.Millisecond},
			{Number: 2, Duration: 1995 * time.Millisecond, ExitCode: 128, Class: "lock-contention",
				Error: "cannot lock ref 'refs/heads/main': Unable to create '" + lock + "': File exists.",
				Lock:  lock, LockAge: 3105 * time.Millisecond, HolderPID: 999999, HolderUnseen: true,
				PIDNamespace: "container", Final: true},
		},
		stderr: "fatal: update_ref failed for ref 'refs/heads/main': cannot lock ref 'refs/heads/main': Unable to create '" + lock + "': File exists.\n\nLock was held by process 999999, which is no longer running; the lock file appears to be stale\n",
		summary: Summary{Result: ResultGaveUp, ExitCode: 128, Attempts: 2, Elapsed: 3006 * time.Millisecond,
			Reason: "deadline", Class: "lock-contention", Error: "cannot lock ref 'refs/heads/main': Unable to create '" + lock + "': File exists.",
			Lock: lock, Updates: 1, Refs: []string{"refs/heads/main"}, GitVersion: "2.55.0", RefBackend: "files",
			Advice: "lock " + lock + " (age 3s, holder pid 999999): its holder, process 999999 (from the ~pid.lock file), is not running here, " +
				"but the lock is younger than the pid grace of 2m0s, and a live holder in another pid namespace looks the same from here; " +
				"refretry runs in a container's pid namespace, where a holder in another container or on the host cannot be seen"},
	},
	"stale-lock": {
		attempts: []Attempt{{Number: 1, Duration: 1002 * time.Millisecond, ExitCode: 128, Class: "stale-lock",
			Error: "cannot lock ref 'refs/heads/main': Unable to create '" + lock + "': File exists.",
			Lock:  lock, LockAge: time.Hour, Final: true}},
		stderr: "fatal: cannot lock ref 'refs/heads/main': Unable to create '" + lock + "': File exists.\n\nAnother git process seems to be running in this repository.\n",
		summary: Summary{Result: ResultStaleLock, ExitCode: 128, Attempts: 1, Elapsed: 1003 * time.Millisecond,
			Class: "stale-lock", Error: "cannot lock ref 'refs/heads/main': Unable to create '" + lock + "': File exists.",
			Lock: lock, Updates: 1, Refs: []string{"refs/heads/main"}, GitVersion: "2.55.0", RefBackend: "files",
			Advice: "stale lock " + lock + " (age 1h0m0s): it is older than the stale-after limit of 2m0s; make sure no git process is using this repository, then remove it: rm -f '" + lock + "'"},
	},
	// A tool's own git push through the shim that lost a race: git's failure, which the
	// tool handles (its own loop pulls and pushes again), so a warning, not an error.
	"shim-push-rejected": {
		command: "push",
		shim:    true,
		attempts: []Attempt{{Number: 1, Duration: 41 * time.Millisecond, ExitCode: 1, Class: "behind",
			Error: "! [rejected] HEAD -> gh-pages (fetch first)", Final: true}},
		stderr: "To /work/remote.git\n ! [rejected]        HEAD -> gh-pages (fetch first)\nerror: failed to push some refs to '/work/remote.git'\n",
		summary: Summary{Result: ResultFailed, ExitCode: 1, Attempts: 1, Elapsed: 43 * time.Millisecond,
			Class: "behind", Error: "! [rejected] HEAD -> gh-pages (fetch first)",
			Updates: 1, Refs: []string{"refs/heads/gh-pages"}, GitVersion: "2.55.0"},
	},
	"conflict": {
		attempts: []Attempt{{Number: 1, Duration: 5 * time.Millisecond, ExitCode: 128, Class: "conflict",
			Error: "cannot lock ref 'refs/heads/main': is at 1111111111111111111111111111111111111111 but expected 2222222222222222222222222222222222222222",
			Final: true}},
		stderr: "fatal: cannot lock ref 'refs/heads/main': is at 1111111111111111111111111111111111111111 but expected 2222222222222222222222222222222222222222\n",
		summary: Summary{Result: ResultFailed, ExitCode: 128, Attempts: 1, Elapsed: 6 * time.Millisecond,
			Class: "conflict", Error: "cannot lock ref 'refs/heads/main': is at 1111111111111111111111111111111111111111 but expected 2222222222222222222222222222222222222222",
			Updates: 1, Refs: []string{"refs/heads/main"}, GitVersion: "2.39.5", RefBackend: "files"},
	},
}

// play runs a scenario through an Operation in format f, with a log file, and returns
// everything it wrote: stderr, the log file, and GitHub's step files.
func play(t *testing.T, f Format, sc scenario) *txtar.Archive {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"GITHUB_OUTPUT":       filepath.Join(dir, "output"),
		"GITHUB_STEP_SUMMARY": filepath.Join(dir, "summary"),
	}
	var stderr, logFile bytes.Buffer
	command := sc.command
	if command == "" {
		command = "update-ref"
	}
	op, err := New(Config{Command: command, Shim: sc.shim, Format: f, Stderr: &stderr, LogFile: &logFile, ID: fixedID,
		Getenv: func(k string) string { return files[k] },
		Now:    func() time.Time { return fixedTime }, Random: &counting{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, a := range sc.attempts {
		if err := op.Attempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := op.Relay().Write([]byte(sc.stderr)); err != nil {
		t.Fatal(err)
	}
	if err := op.Finish(ctx, sc.summary); err != nil {
		t.Fatal(err)
	}
	ar := &txtar.Archive{Files: []txtar.File{
		{Name: "stderr", Data: stderr.Bytes()},
		{Name: "log-file", Data: logFile.Bytes()},
	}}
	for _, name := range []string{"GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"} {
		if data, err := os.ReadFile(files[name]); err == nil {
			ar.Files = append(ar.Files, txtar.File{Name: name, Data: data})
		}
	}
	return ar
}

// TestGolden compares every format's output for every scenario with
// testdata/golden/<format>/<scenario>.txtar (go test -update rewrites them).
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, f := range []Format{formatText, formatJSON, formatGitHub, formatGitLab} {
		for name, sc := range scenarios {
			t.Run(string(f)+"/"+name, func(t *testing.T) {
				t.Parallel()
				got := txtar.Format(play(t, f, sc))
				path := filepath.Join("testdata", "golden", string(f), name+".txtar")
				if *update {
					if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", path, got, want)
				}
			})
		}
	}
}
