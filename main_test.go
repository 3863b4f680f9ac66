package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/shim"
)

// binary is refretry as the tests that start processes run it: a link named refretry
// to this test binary, which TestMain turns into refretry when it is started under
// that name. So the binary under test is built as the tests are: with the race
// detector under -race and counting coverage under -cover.
//
// REFRETRY_TEST_REFRETRY, when set, names a refretry built apart, and the link points
// to it instead. The stress tier (scripts/test.sh --stress, docs/testing.md) sets it
// to a build without the race detector: there the storms start refretry thousands of
// times, and 600 starts of the race-instrumented test binary cost 53 s on 2 cores
// before any of them does work, while the test process itself, which the race
// detector watches, stays instrumented. The race detector over refretry's own
// goroutines is tier 2's job (scripts/test.sh runs the root package's tests under
// -race at their default size, with this link to the test binary).
//
// This is testscript.Main's idiom done by hand: the commands testscript.Main
// registers become script builtins, which take precedence over Params.Cmds, and the
// scripts need a refretry command of their own (it records the exit status that
// `status` checks; script_test.go).
var binary string

func TestMain(m *testing.M) {
	// Started under the name refretry (binary, or a link to it), this binary is
	// refretry; under the name git (the shim tests install binary as git), refretry's
	// git shim, which main tells apart by that name.
	if name := filepath.Base(os.Args[0]); name == "refretry" || shim.Invoked(name) {
		main()
	}
	// Another user's process in TestCoalesceForeignUser.
	if os.Getenv(foreignNameEnv) != "" {
		os.Exit(foreignHelper())
	}
	os.Exit(runTests(m))
}

// runTests makes binary and runs the tests.
func runTests(m *testing.M) int {
	flag.Parse()
	testutil.RaiseParallel()
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	dir, err := os.MkdirTemp("", "refretry-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "refretry")
	if built := os.Getenv("REFRETRY_TEST_REFRETRY"); built != "" {
		if self, err = filepath.Abs(built); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if _, err := os.Stat(self); err != nil {
			fmt.Fprintf(os.Stderr, "REFRETRY_TEST_REFRETRY: %v\n", err)
			return 2
		}
	}
	if err := os.Symlink(self, binary); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	// What every refretry the tests start inherits: under -race it would otherwise
	// wait a second at exit for racing goroutines to report (a race is still
	// reported, on the stderr the tests compare, and in exit code 66); under -cover
	// its counters join the test's own, instead of a warning on its stderr.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	if dir := coverDir(); dir != "" {
		os.Setenv("GOCOVERDIR", dir)
	}
	return m.Run()
}

// result is what a process left behind.
type result struct {
	stdout, stderr string
	code           int
}

// runIn runs name (git or refretry) in repo with args and stdin.
func runIn(t *testing.T, r *testutil.Repo, stdin string, name string, args ...string) result {
	t.Helper()
	cmd := refretryCommand(r, args...)
	if name == "git" {
		cmd = commandIn(r, r.Git.Path, append([]string{"update-ref"}, args...)...)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return result{out.String(), errOut.String(), code}
}

type backendCase struct {
	git     testutil.Git
	backend string
}

func backends(t *testing.T) []backendCase {
	old, cur := testutil.SystemGit(t), testutil.NewGit(t)
	// At the default size git 2.39 on files and git 2.55 on reftable: each git and each
	// backend once; the stress size adds git 2.55 on files (testutil.Cells).
	return testutil.Cells(t, []backendCase{{old, "files"}, {cur, "files"}, {cur, "reftable"}}, 0, 2)
}

// TestSameAsGit runs failures that must not be retried through git and through
// refretry on the same repository (a failure changes nothing) and wants identical
// bytes and exit codes, one attempt, and no ref changed.
func TestSameAsGit(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			other := r.NewCommit("second")
			zero := strings.Repeat("0", 40)
			cases := []struct {
				name  string
				stdin string
				args  []string
				code  int
			}{
				{"cas mismatch", "", []string{"refs/heads/main", other, r.Commit}, 128},
				{"cas mismatch stdin", "update refs/heads/main " + other + " " + r.Commit + "\n", []string{"--stdin"}, 128},
				{"already exists", "", []string{"refs/heads/main", r.Commit, zero}, 128},
				{"delete wrong old", "", []string{"-d", "refs/heads/main", r.Commit}, 1},
				{"delete missing with old", "", []string{"-d", "refs/heads/nope", r.Commit}, 1},
				{"bad name", "", []string{"refs/heads/a..b", r.Commit}, 128},
				{"unknown object", "", []string{"refs/heads/x", strings.Repeat("1", 40)}, 128},
				{"not a valid SHA1", "", []string{"refs/heads/x", "nosuchrev"}, 128},
				{"abbreviated cas mismatch", "", []string{"--no-d", "--cr", "refs/heads/main", other, r.Commit}, 128},
				{"usage ambiguous", "", []string{"--n", "refs/heads/x", r.Commit}, 129},
				{"usage valued", "", []string{"--std=1"}, 129},
				{"usage no args", "", nil, 129},
				{"usage stdin with args", "", []string{"--stdin", "refs/heads/x"}, 129},
				{"usage -z without stdin", "", []string{"-z", "refs/heads/x", r.Commit}, 129},
				{"empty message", "", []string{"-m", "", "refs/heads/x", r.Commit}, 128},
				{"crlf input", "update refs/heads/x " + r.Commit + "\r\n", []string{"--stdin"}, 128},
				{"missing final newline", "update refs/heads/x " + r.Commit, []string{"--stdin"}, 128},
				{"unknown command", "frobnicate refs/heads/x\n", []string{"--stdin"}, 128},
				{"duplicate ref", "update refs/heads/x " + r.Commit + "\nupdate refs/heads/x " + other + "\n", []string{"--stdin"}, 128},
				{"bad quoting", "update \"refs/heads/x " + r.Commit + "\n", []string{"--stdin"}, 128},
				{"z missing field", "update refs/heads/x\x00" + r.Commit, []string{"--stdin", "-z"}, 128},
				{"restart", "start\nstart\n", []string{"--stdin"}, 128},
				{"closed", "start\ncommit\nupdate refs/heads/x " + r.Commit + "\n", []string{"--stdin"}, 128},
			}
			for _, tc := range cases {
				before := r.Refs("refs/")
				want := runIn(t, r, tc.stdin, "git", tc.args...)
				got := runIn(t, r, tc.stdin, "refretry", tc.args...)
				if want.code != tc.code {
					t.Errorf("%s: git exited %d, the test expects %d (stderr %q)", tc.name, want.code, tc.code, want.stderr)
				}
				if got != want {
					t.Errorf("%s: refretry differs from git\n got: %+v\nwant: %+v", tc.name, got, want)
				}
				if after := r.Refs("refs/"); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Errorf("%s: refs changed: %v -> %v", tc.name, before, after)
				}
			}
		})
	}
}

// TestConcurrentWriters is the motivating case: 300 processes (30 unless the tests
// run at stress size, testutil.Scale), distinct refs, one reftable repository. Every
// one must succeed and every ref hold its value.
func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	n := testutil.Scale(t, 30, 300)
	var wg sync.WaitGroup
	results := make([]result, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runIn(t, r, "", "refretry", fmt.Sprintf("refs/heads/w/%d", i), r.Commit)
		}()
	}
	wg.Wait()
	for i, res := range results {
		if res.code != 0 || res.stdout != "" {
			t.Errorf("writer %d: exit %d, stdout %q, stderr %q", i, res.code, res.stdout, res.stderr)
		}
	}
	refs := r.Refs("refs/heads/w/")
	if len(refs) != n {
		t.Fatalf("%d refs written, want %d", len(refs), n)
	}
	for name, oid := range refs {
		if oid != r.Commit {
			t.Errorf("%s = %s, want %s", name, oid, r.Commit)
		}
	}
}

// TestHeldLockReleased holds the lock a writer needs for about a second: refretry
// waits it out, reports the retry, and git's final (empty) output is all that follows.
func TestHeldLockReleased(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		for _, form := range []string{"single", "stdin", "stdin-z", "delete-packed"} {
			t.Run(bc.git.Name()+"/"+bc.backend+"/"+form, func(t *testing.T) {
				t.Parallel()
				r := testutil.NewRepo(t, bc.git, bc.backend)
				ref := "refs/heads/held"
				args, stdin := []string{ref, r.Commit}, ""
				lock := r.LockPath(ref)
				switch form {
				case "stdin":
					args, stdin = []string{"--stdin"}, "create "+ref+" "+r.Commit+"\n"
				case "stdin-z":
					args, stdin = []string{"--stdin", "-z"}, "create "+ref+"\x00"+r.Commit+"\x00"
				case "delete-packed":
					r.Run("update-ref", ref, r.Commit)
					args = []string{"-d", ref}
					if bc.backend == "files" {
						lock = filepath.Join(r.GitDir, "packed-refs.lock")
					}
				}
				release := r.Hold(lock)
				// git itself waits 100 ms for a ref lock and 1 s for packed-refs.lock.
				res := runHeld(t, r, stdin, release, args...)
				if res.code != 0 || res.stdout != "" {
					t.Fatalf("exit %d stdout %q stderr %q", res.code, res.stdout, res.stderr)
				}
				if !strings.Contains(res.stderr, "refretry: attempt 1 failed (lock-contention") {
					t.Errorf("stderr %q: want a retry line", res.stderr)
				}
				for _, line := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
					if !strings.HasPrefix(line, "refretry: attempt ") {
						t.Errorf("stderr line %q: want only refretry's retry lines", line)
					}
				}
				refs := r.Refs(ref)
				if form == "delete-packed" && len(refs) != 0 || form != "delete-packed" && refs[ref] != r.Commit {
					t.Errorf("refs after %s: %v", form, refs)
				}
			})
		}
	}
}

// TestStdinFromFile: with its input in a regular file, git reads the file itself
// (nothing is copied through refretry), and a retry starts git again after the last
// transaction it answered: each "…: ok" line is printed once, nothing is applied
// twice, and a file already partly read by the caller is read from where it stands,
// as git reads it.
func TestStdinFromFile(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			skipped, a, b := "refs/heads/skipped", "refs/heads/a", "refs/heads/b"
			first := fmt.Sprintf("create %s %s\n", skipped, r.Commit)
			input := first + fmt.Sprintf("start\ncreate %s %s\ncommit\nstart\ncreate %s %s\ncommit\n", a, r.Commit, b, r.Commit)
			path := filepath.Join(t.TempDir(), "input")
			if err := os.WriteFile(path, []byte(input), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.Seek(int64(len(first)), io.SeekStart); err != nil {
				t.Fatal(err)
			}
			// On the files backend only b's transaction meets the lock: a's is
			// committed first, and the retry must not run it again (it would fail:
			// a exists). On reftable both meet it.
			release := r.Hold(r.LockPath(b))
			cmd := refretryCommand(r, "--stdin")
			cmd.Stdin = f
			var out bytes.Buffer
			var errOut syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			let := letGoAfterRetry(&errOut, release)
			err = cmd.Run()
			if !let() {
				t.Errorf("refretry ended before the lock was let go")
			}
			if err != nil {
				t.Fatalf("%v; stderr %q", err, errOut.String())
			}
			if want := "start: ok\ncommit: ok\nstart: ok\ncommit: ok\n"; out.String() != want {
				t.Errorf("stdout %q, want %q", out.String(), want)
			}
			if !strings.Contains(errOut.String(), "refretry: attempt 1 failed (lock-contention") {
				t.Errorf("stderr %q: want a retry line", errOut.String())
			}
			refs := r.Refs("refs/heads/")
			if refs[a] != r.Commit || refs[b] != r.Commit {
				t.Errorf("refs %v", refs)
			}
			if _, ok := refs[skipped]; ok {
				t.Errorf("the part of the file read before refretry started was applied: %v", refs)
			}
		})
	}
}

// TestMillionUpdateBatch: a --stdin batch of a million creates goes through refretry
// (input spooled to disk past its memory limit) and every ref lands. Unless the tests
// run at stress size (testutil.Scale) the batch has 100,000 creates: about 7 MB of
// input, still past the spool's 4 MiB in memory.
func TestMillionUpdateBatch(t *testing.T) {
	t.Parallel()
	n := testutil.Scale(t, 100_000, 1_000_000)
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	cmd := refretryCommand(r, "--stdin")
	pr, pw := io.Pipe()
	cmd.Stdin = pr
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		bw := bufio.NewWriterSize(pw, 1<<20)
		for i := range n {
			fmt.Fprintf(bw, "create refs/heads/m/%07d %s\n", i, r.Commit)
		}
		pw.CloseWithError(bw.Flush())
	}()
	if err := cmd.Wait(); err != nil || out.Len() != 0 || errOut.Len() != 0 {
		t.Fatalf("refretry --stdin: %v, stdout %q, stderr %q", err, out.String(), errOut.String())
	}
	count := commandIn(r, r.Git.Path, "for-each-ref", "--format=%(objectname)", "refs/heads/m/")
	lines, err := count.Output()
	if err != nil {
		t.Fatal(err)
	}
	got, wrong := 0, 0
	for _, oid := range strings.Split(strings.TrimSpace(string(lines)), "\n") {
		got++
		if oid != r.Commit {
			wrong++
		}
	}
	if got != n || wrong != 0 {
		t.Errorf("%d refs, %d at the wrong commit; want %d at %s", got, wrong, n, r.Commit)
	}
}

// TestStaleLock: a lock older than --stale-after, or one whose holder pid is not
// running here and which is older than --pid-grace, stops refretry at once with git's
// message and exit code and one line saying which file, how old, whose, and how to
// remove it.
func TestStaleLock(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadPID := dead.Process.Pid
	for _, backend := range []string{"files", "reftable"} {
		for _, kind := range []string{"old", "dead-pid"} {
			t.Run(backend+"/"+kind, func(t *testing.T) {
				t.Parallel()
				r := testutil.NewRepo(t, g, backend)
				ref := "refs/heads/stale"
				lock := r.LockPath(ref)
				r.Hold(lock)
				args := []string{"--timeout", "30s", ref, r.Commit}
				age := time.Hour
				if kind == "dead-pid" {
					pidFile := strings.TrimSuffix(lock, ".lock") + "~pid.lock"
					if err := os.WriteFile(pidFile, []byte(fmt.Sprintf("pid %d\n", deadPID)), 0o644); err != nil {
						t.Fatal(err)
					}
					// Past the pid grace, well short of the stale-after limit.
					age, args = 10*time.Minute, append([]string{"--stale-after", "1h", "--pid-grace", "5m"}, args...)
				}
				old := time.Now().Add(-age)
				if err := os.Chtimes(lock, old, old); err != nil {
					t.Fatal(err)
				}
				res := runIn(t, r, "", "refretry", args...)
				if res.code != 128 {
					t.Errorf("exit %d, want 128", res.code)
				}
				lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
				last := lines[len(lines)-1]
				if !strings.HasPrefix(last, "refretry: stale lock "+lock) || !strings.Contains(last, "rm -f '"+lock+"'") {
					t.Errorf("last line %q: want the stale lock named with removal advice", last)
				}
				if kind == "old" && !strings.Contains(last, "(age 1h0m") {
					t.Errorf("last line %q: want the lock's age", last)
				}
				if want := fmt.Sprintf(", holder pid %d): its holder, process %d (from the ~pid.lock file), is not running here, and the lock is older than the pid grace of 5m0s", deadPID, deadPID); kind == "dead-pid" && !strings.Contains(last, want) {
					t.Errorf("last line %q: want %q", last, want)
				}
				if strings.Contains(res.stderr, "retrying") {
					t.Errorf("stderr %q: a stale lock must not be retried", res.stderr)
				}
				if refs := r.Refs(ref); len(refs) != 0 {
					t.Errorf("ref written: %v", refs)
				}
			})
		}
	}
}

// TestStaleLockManyWriters: writers queued behind one another on a reftable
// repository whose tables.list.lock is stale each stop with the stale-lock report,
// none of them retries, and nothing is written.
func TestStaleLockManyWriters(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	lock := r.LockPath("refs/heads/x")
	r.Hold(lock)
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(lock, old, old); err != nil {
		t.Fatal(err)
	}
	const n = 20
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runIn(t, r, "", "refretry", "--timeout", "60s", fmt.Sprintf("refs/heads/w%d", i), r.Commit)
		}()
	}
	wg.Wait()
	for i, res := range results {
		if res.code != 128 || !strings.Contains(res.stderr, "refretry: stale lock "+lock) || strings.Contains(res.stderr, "retrying") {
			t.Errorf("writer %d: exit %d, stderr %q; want 128 and one stale-lock report, no retry", i, res.code, res.stderr)
		}
	}
	if refs := r.Refs("refs/heads/w"); len(refs) != 0 {
		t.Errorf("refs written: %v", refs)
	}
}

// TestInteractiveLockAtPrepare drives the start/prepare/commit protocol while the lock
// is held: the caller sees each "<verb>: ok" once, in order, as it asks for it.
func TestInteractiveLockAtPrepare(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			ref := "refs/heads/tx"
			cmd := refretryCommand(r, "--stdin")
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			var errOut syncBuffer
			cmd.Stderr = &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := make(chan string, 10)
			go func() {
				buf := make([]byte, 1)
				var line []byte
				for {
					if _, err := stdout.Read(buf); err != nil {
						close(lines)
						return
					}
					line = append(line, buf[0])
					if buf[0] == '\n' {
						lines <- string(line)
						line = nil
					}
				}
			}()
			expect := func(want string) {
				t.Helper()
				select {
				case got := <-lines:
					if got != want {
						t.Fatalf("got %q, want %q", got, want)
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("no %q", want)
				}
			}
			fmt.Fprintf(stdin, "start\n")
			expect("start: ok\n")
			// Let go once the first attempt (whose git waits 1 s for it) has failed.
			let := letGoAfterRetry(&errOut, r.Hold(r.LockPath(ref)))
			fmt.Fprintf(stdin, "create %s %s\nprepare\n", ref, r.Commit)
			expect("prepare: ok\n")
			fmt.Fprintf(stdin, "commit\n")
			expect("commit: ok\n")
			fmt.Fprintf(stdin, "start\ncreate %s-2 %s\ncommit\n", ref, r.Commit)
			expect("start: ok\n")
			expect("commit: ok\n")
			stdin.Close()
			if _, more := <-lines; more {
				t.Error("unexpected extra output")
			}
			err := cmd.Wait()
			if !let() {
				t.Errorf("refretry ended before the lock was let go")
			}
			if err != nil {
				t.Fatalf("%v; stderr %q", err, errOut.String())
			}
			if !strings.Contains(errOut.String(), "refretry: attempt 1 failed (lock-contention") {
				t.Errorf("stderr %q: want a retry line", errOut.String())
			}
			if refs := r.Refs("refs/heads/"); refs[ref] != r.Commit || refs[ref+"-2"] != r.Commit {
				t.Errorf("refs %v", refs)
			}
		})
	}
}

// TestSIGTERMWhileWaiting: refretry stops at once, exits as a shell reports SIGTERM,
// and leaves no lock of git's behind.
func TestSIGTERMWhileWaiting(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			ref := "refs/heads/sig"
			held := r.LockPath(ref)
			defer r.Hold(held)()
			cmd := refretryCommand(r, "--stdin")
			// Two refs: git locks the free one before failing on the held one.
			cmd.Stdin = strings.NewReader(fmt.Sprintf("create refs/heads/a-free %s\ncreate %s %s\n", r.Commit, ref, r.Commit))
			var errOut syncBuffer
			cmd.Stderr = &errOut
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(20 * time.Second)
			for !strings.Contains(errOut.String(), "retrying") && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			// The second attempt's git has taken the free ref's lock (files) or is
			// running at all (reftable): it waits for the held one.
			exited := make(chan struct{})
			defer close(exited)
			for waiting := false; !waiting; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("no second attempt waiting; stderr %q", errOut.String())
				}
				pid := gitChild(cmd, exited)
				waiting = pid != 0 &&
					(bc.backend == "reftable" || contains(lockFiles(r.GitDir), r.LockPath("refs/heads/a-free")) && asleep(pid))
			}
			start := time.Now()
			cmd.Process.Signal(syscall.SIGTERM)
			err := cmd.Wait()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 143 {
				t.Fatalf("exit %v, want 143; stderr %q", err, errOut.String())
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v to stop", took)
			}
			var locks []string
			filepath.Walk(r.GitDir, func(p string, _ os.FileInfo, _ error) error {
				if strings.HasSuffix(p, ".lock") && p != held {
					locks = append(locks, p)
				}
				return nil
			})
			if len(locks) > 0 {
				t.Errorf("locks left behind: %v", locks)
			}
			if refs := r.Refs("refs/heads/"); refs["refs/heads/a-free"] != "" || refs[ref] != "" {
				t.Errorf("refs written: %v", refs)
			}
		})
	}
}

// asleep reports whether pid sleeps other than in read(2): a git with the free ref's
// lock file seen is then in its lock wait for the held one, past the moment between
// creating that file and registering it for removal at a signal, when a SIGTERM
// would leave it behind (git's own window, which a loaded machine can stretch).
func asleep(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// "pid (comm) S ...": the state follows the command's closing parenthesis.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) || stat[i+2] != 'S' {
		return false
	}
	sc, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid))
	return err == nil && readSyscall != "" && !strings.HasPrefix(string(sc), readSyscall+" ")
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// refretryCommand runs refretry (binary) in the repository, pointed at its git.
func refretryCommand(r *testutil.Repo, args ...string) *exec.Cmd {
	return commandIn(r, binary, args...)
}

// commandIn runs path in the repository with its environment.
func commandIn(r *testutil.Repo, path string, args ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = r.Dir, envFor(r)
	return cmd
}

// envFor is the repository's environment with refretry pointed at its git; a fresh
// slice each call, as concurrent commands must not share one.
func envFor(r *testutil.Repo) []string {
	return append(slices.Clip(r.Env), "REFRETRY_GIT="+r.Git.Path)
}
