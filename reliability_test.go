package main

// The reliability suite's fault injection (docs/reliability.md): processes killed at
// random points, locks held by stopped or dead processes, a read-only repository, a
// full disk, and reference-transaction hooks that fail or sleep, all against real
// git. Each test asserts the documented outcome, the exact exit code and message,
// and that no batch is ever half-applied.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/platform"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// childPIDs lists pid's children, from every thread's children file.
func childPIDs(pid int) []int {
	var kids []int
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				kids = append(kids, n)
			}
		}
	}
	return kids
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// waitGone waits until pid has exited (an orphaned git finishing its work).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Minute); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d did not exit", pid)
		}
	}
}

// gitChild waits for refretry (pid) to run git update-ref and returns git's pid, or 0
// if refretry exited first. A git that has exited and is not reaped yet (a zombie,
// which a signal "reaches" without effect) is not taken: the next attempt's git is.
// Nor is another git refretry runs (the `git config` it reads its settings with
// before a retry): a stress-tier round signalled one, and the batch then landed.
func gitChild(cmd *exec.Cmd, exited <-chan struct{}) int {
	for {
		for _, k := range childPIDs(cmd.Process.Pid) {
			comm, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/comm", k))
			args, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", k))
			if err1 == nil && err2 == nil && strings.TrimSpace(string(comm)) == "git" &&
				slices.Contains(strings.Split(string(args), "\x00"), "update-ref") && alive(k) {
				return k
			}
		}
		select {
		case <-exited:
			return 0
		case <-time.After(time.Millisecond):
		}
	}
}

// readSyscall is read(2)'s number, as /proc/<pid>/syscall shows it.
var readSyscall = map[string]string{"amd64": "0", "arm64": "63"}[runtime.GOARCH]

// waitReading waits until pid is blocked reading its standard input: it has consumed
// everything written to it so far. It fails the test if pid exits first.
func waitReading(t *testing.T, pid int) {
	t.Helper()
	if readSyscall == "" {
		t.Skipf("no read(2) number known for %s", runtime.GOARCH)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", pid))
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("process %d never blocked reading its input (%v)", pid, err)
		}
		if f := strings.Fields(string(b)); len(f) > 1 && f[0] == readSyscall && f[1] == "0x0" {
			return
		}
	}
}

// lockFiles lists every *.lock under dir except those in skip.
func lockFiles(dir string, skip ...string) []string {
	var locks []string
	filepath.Walk(dir, func(p string, _ os.FileInfo, _ error) error {
		if strings.HasSuffix(p, ".lock") && !contains(skip, p) {
			locks = append(locks, p)
		}
		return nil
	})
	return locks
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// exitCode is the status a shell would report for a finished command.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	ee, ok := err.(*exec.ExitError)
	if !ok {
		t.Fatalf("wait: %v", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// holder is a plain git transaction kept in the prepared state, holding its locks.
type holder struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
	once  sync.Once
}

// release aborts the holder's transaction (once), letting its locks go.
func (h *holder) release() { h.once.Do(func() { fmt.Fprintf(h.stdin, "abort\n") }) }

// hold starts git update-ref --stdin with extra config, sends start, the commands and
// prepare, and returns once git says "prepare: ok".
func hold(t *testing.T, r *testutil.Repo, config []string, commands string) *holder {
	t.Helper()
	var args []string
	for _, c := range config {
		args = append(args, "-c", c)
	}
	return holdWith(t, commandIn(r, r.Git.Path, append(args, "update-ref", "--stdin")...), commands)
}

// holdWith is hold for cmd, a git update-ref --stdin however it is started.
func holdWith(t *testing.T, cmd *exec.Cmd, commands string) *holder {
	t.Helper()
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var errOut syncBuffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &holder{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	fmt.Fprintf(stdin, "start\n%sprepare\n", commands)
	for _, want := range []string{"start: ok\n", "prepare: ok\n"} {
		if got, err := h.out.ReadString('\n'); got != want {
			t.Fatalf("holder: got %q (%v), want %q; stderr %q", got, err, want, errOut.String())
		}
	}
	return h
}

// abort ends the holder's transaction and waits for it.
func (h *holder) abort(t *testing.T) {
	t.Helper()
	h.release()
	h.stdin.Close()
	io.Copy(io.Discard, h.out)
	if err := h.cmd.Wait(); err != nil {
		t.Errorf("holder: %v", err)
	}
}

// batchInput is a --stdin batch creating n refs under prefix.
func batchInput(prefix, oid string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "create %s%03d %s\n", prefix, i, oid)
	}
	return b.String()
}

// allOrNothing checks that the n refs of a batch are either all at oid or all absent,
// and returns which.
func allOrNothing(t *testing.T, r *testutil.Repo, prefix, oid string, n int) (applied bool) {
	t.Helper()
	refs := r.Refs(prefix)
	if len(refs) != 0 && len(refs) != n {
		t.Fatalf("batch half-applied: %d of %d refs under %s", len(refs), n, prefix)
	}
	for name, v := range refs {
		if v != oid {
			t.Fatalf("%s = %s, want %s", name, v, oid)
		}
	}
	return len(refs) == n
}

// TestReliabilityKill kills refretry, or the git it runs, with SIGKILL or SIGTERM at a
// random point of a 100-ref batch whose lock is held for part of the time, so that the
// kill lands while git waits, between attempts, or during the final attempt. The batch
// is all or nothing; after SIGTERM no lock is left behind and the exit code is the
// documented one. The random points come from a seed printed on failure.
//
// Every round's outcome is asserted (killBatch), but which outcome a round must have
// depends on where its signal landed. Round 0 signals once git is seen waiting for the
// held lock (batchRun.whenGitWaits), not at a guessed time, and lets the lock go only
// after that: its signal must reach a running process while git waits, and the test
// requires it. The other rounds draw their moment from the whole hold and the half
// second after it, the moments after git committed included: a signal that finds the
// batch done is checked as an unkilled run (exit 0, every ref applied), one that
// reached it as a killed run (the exit code of the signal, all or nothing applied).
// Five rounds run at stress size, two by default (testutil.Scale).
func TestReliabilityKill(t *testing.T) {
	t.Parallel()
	seed := time.Now().UnixNano()
	if s := os.Getenv("REFRETRY_RELIABILITY_SEED"); s != "" {
		seed, _ = strconv.ParseInt(s, 10, 64)
	}
	t.Logf("seed %d (REFRETRY_RELIABILITY_SEED replays it)", seed)
	const n = 100
	rounds := testutil.Scale(t, 2, 5)
	for _, bc := range backends(t) {
		for _, victim := range []string{"refretry", "git"} {
			for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
				name := fmt.Sprintf("%s/%s/%s/%s", bc.git.Name(), bc.backend, victim, sig)
				rng := rand.New(rand.NewSource(seed + int64(len(name))))
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					landed := 0
					for round := range rounds {
						// The lock is held for 0.3–2.8 s; the signal comes at any point
						// up to half a second after its release.
						holdMS := 300 + rng.Intn(2500)
						delayMS := rng.Intn(holdMS + 500)
						if victim == "refretry" && sig == syscall.SIGKILL {
							// Not before refretry has passed the whole input on: see
							// TestReliabilityKillMidInput for what happens then.
							delayMS = max(delayMS, 100)
						}
						if round == 0 {
							// Once git waits for the held lock: it has read the whole
							// input and taken every other lock.
							delayMS = -1
						}
						if killBatch(t, bc, victim, sig, delayMS, holdMS, round, n) {
							landed++
						} else if round == 0 {
							t.Errorf("round 0: the signal sent while git waited for the held lock did not reach a running %s", victim)
						}
					}
					t.Logf("faults: %d of %d signals landed while the batch was running", landed, rounds)
				})
			}
		}
	}
}

// batchRun is one batch of killBatch: refretry running it, and the lock held against it.
type batchRun struct {
	r        *testutil.Repo
	cmd      *exec.Cmd
	exited   chan struct{} // closed once refretry has exited
	heldLock string
	backend  string
	n        int
}

// locksTaken reports whether git holds every lock the batch needs but the held one
// (reftable needs only the held one).
func (b *batchRun) locksTaken() bool {
	locks := lockFiles(b.r.GitDir)
	return contains(locks, b.heldLock) && (b.backend == "reftable" || len(locks) == b.n)
}

// whenGitWaits returns a channel that gets the pid of refretry's git update-ref once
// that git waits for the held lock: it has taken every other lock and sleeps in its
// lock wait (asleep: past the moment between creating a lock file and registering it
// for removal). Nothing comes if refretry exits first.
func (b *batchRun) whenGitWaits() <-chan int {
	ready := make(chan int, 1)
	go func() {
		for {
			k := gitChild(b.cmd, b.exited)
			if k == 0 {
				return
			}
			if b.locksTaken() && asleep(k) {
				ready <- k
				return
			}
			select {
			case <-b.exited:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return ready
}

// afterDelay returns a channel closed once d has passed (it gives 0, no git's pid).
func afterDelay(d time.Duration) <-chan int {
	c := make(chan int)
	time.AfterFunc(d, func() { close(c) })
	return c
}

// batchKill is what killBatch's signal did: whether it reached a running process,
// whether git then waited for the held lock with every other lock taken, and git's
// pid (0 if none was seen).
type batchKill struct {
	killed, waiting bool
	gitPID          int
}

// signal sends sig to victim once at gives a value, unless refretry has exited by
// then: the pid of the git to signal, or 0 for whichever git update-ref runs.
func (b *batchRun) signal(victim string, sig syscall.Signal, at <-chan int) batchKill {
	var k batchKill
	target := b.cmd.Process.Pid
	if victim == "git" {
		k.gitPID = gitChild(b.cmd, b.exited)
		target = k.gitPID
	}
	select {
	case <-b.exited:
		return k
	case pid := <-at:
		if pid != 0 {
			k.gitPID = pid
			if victim == "git" {
				target = pid
			}
		}
	}
	if victim == "git" && !alive(k.gitPID) {
		// That git has finished; the next attempt's git, if any, is the target.
		if k.gitPID = gitChild(b.cmd, b.exited); k.gitPID == 0 {
			return k
		}
		target = k.gitPID
	}
	if kids := childPIDs(b.cmd.Process.Pid); victim == "refretry" && k.gitPID == 0 && len(kids) > 0 {
		k.gitPID = kids[0]
	}
	k.waiting = b.locksTaken()
	// A git that ended since it was found is a zombie until refretry reaps it,
	// and kill(2) succeeds on one: only a signal to a live process counts.
	k.killed = (victim != "git" || alive(target)) && syscall.Kill(target, sig) == nil
	for tries := 0; !k.killed && victim == "git" && tries < 5; tries++ {
		// That git ended between the look and the signal (its own lock wait ran
		// out, and refretry reaped it): the next attempt's git is the target.
		if k.gitPID = gitChild(b.cmd, b.exited); k.gitPID == 0 {
			break
		}
		target = k.gitPID
		k.waiting = b.locksTaken()
		k.killed = alive(target) && syscall.Kill(target, sig) == nil
	}
	return k
}

// killBatch runs one batch and sends sig to victim: delayMS after the lock was taken,
// the lock being let go holdMS after it was taken; or, with delayMS < 0, once git
// waits for the held lock, which is let go after the signal. It checks the outcome
// and reports whether the signal reached a running process.
func killBatch(t *testing.T, bc backendCase, victim string, sig syscall.Signal, delayMS, holdMS, round, n int) bool {
	t.Helper()
	r := testutil.NewRepo(t, bc.git, bc.backend)
	prefix := fmt.Sprintf("refs/heads/batch%d/", round)
	// The lock of the batch's last ref (or reftable's one lock) is held.
	b := &batchRun{r: r, heldLock: r.LockPath(fmt.Sprintf("%s%03d", prefix, n-1)), backend: bc.backend, n: n,
		exited: make(chan struct{})}
	release := r.Hold(b.heldLock)
	held := time.Now()
	b.cmd = refretryCommand(r, "--stdin")
	b.cmd.Stdin = strings.NewReader(batchInput(prefix, r.Commit, n))
	var errOut syncBuffer
	b.cmd.Stderr = &errOut
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	go func() { waitErr = b.cmd.Wait(); close(b.exited) }()
	var k batchKill
	if delayMS < 0 {
		k = b.signal(victim, sig, b.whenGitWaits())
		// The lock stays held until the signal has had its effect (the run ended), for
		// at most 10 s: released at once, git could take it and commit before a loaded
		// machine ran refretry's handler of the signal (seen in a CI rehearsal), and
		// the batch would end unkilled. A refretry that ignored the signal still ends
		// unkilled, after the release.
		select {
		case <-b.exited:
		case <-time.After(10 * time.Second):
		}
		release()
	} else {
		// The signal's delay counts from when the lock was taken, as the hold does: on
		// a loaded machine git may start later than the delay, and the signal then goes
		// at once, still while the lock is held (counting from git's start, it could
		// come after the release, when the batch is done).
		time.AfterFunc(time.Duration(holdMS)*time.Millisecond, release)
		k = b.signal(victim, sig, afterDelay(time.Until(held.Add(time.Duration(delayMS)*time.Millisecond))))
	}
	<-b.exited
	if k.gitPID != 0 {
		waitGone(t, k.gitPID) // a git orphaned by SIGKILL finishes on its own
	}
	code := exitCode(t, waitErr)
	when := fmt.Sprintf("after %d ms (lock held %d ms", delayMS, holdMS)
	if delayMS < 0 {
		when = "once git waited (lock held until then"
	}
	t.Logf("round %d: %s %s %s, killed %v, git waiting %v): exit %d, %d of %d applied",
		round, sig, victim, when, k.killed, k.waiting, code, len(r.Refs(prefix)), n)
	checkKilledBatch(t, b, prefix, victim, sig, k, code, errOut.String())
	return k.killed && code != 0
}

// checkKilledBatch checks the outcome of killBatch's batch: all or nothing applied
// (or, on files, the prefix git's commit phase had reached), the exit code of the
// run, killed or not, and no lock left behind by a SIGTERM while git waited.
func checkKilledBatch(t *testing.T, b *batchRun, prefix, victim string, sig syscall.Signal, k batchKill, code int, stderr string) {
	t.Helper()
	r, n := b.r, b.n
	refs := r.Refs(prefix)
	if got := len(refs); got != 0 && got != n {
		// git's files backend commits a batch ref by ref, in name order: a signal
		// that reaches git in that window (SIGTERM to refretry is passed on to git)
		// leaves a prefix applied, as it would with git alone. Anything else is a
		// half-applied batch.
		prefixApplied := true
		for i := range got {
			prefixApplied = prefixApplied && refs[fmt.Sprintf("%s%03d", prefix, i)] == r.Commit
		}
		gitSignalled := victim == "git" || sig == syscall.SIGTERM
		if b.backend != "files" || !prefixApplied || !gitSignalled || !k.killed {
			t.Fatalf("batch half-applied: %d of %d refs: %v", got, n, refs)
		}
		t.Logf("faults: git's files commit phase interrupted: the first %d refs, in name order, were committed", got)
	} else if got == n {
		allOrNothing(t, r, prefix, r.Commit, n)
	}
	switch {
	case !k.killed || code == 0:
		if code != 0 || len(refs) != n {
			t.Errorf("finished unkilled: exit %d, applied %v; stderr %q", code, len(refs) == n, stderr)
		}
	case victim == "refretry":
		// As a shell reports death by signal: 137 for SIGKILL, 143 for SIGTERM.
		if want := 128 + int(sig); code != want {
			t.Errorf("exit %d, want %d; stderr %q", code, want, stderr)
		}
	default:
		// git died of the signal: refretry does not retry it and exits as git did,
		// adding nothing to what git printed (SIGKILL and SIGTERM leave git silent)
		// but the lines of the retries before.
		if want := 128 + int(sig); code != want {
			t.Errorf("exit %d (want %d); stderr %q", code, want, stderr)
		}
		for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
			if l != "" && !strings.HasPrefix(l, "refretry: attempt ") {
				t.Errorf("stderr line %q: want only earlier attempts' retry lines", l)
			}
		}
	}
	if sig == syscall.SIGTERM && k.killed {
		// git removes its locks on SIGTERM while it waits for one. Caught while
		// taking them, git itself (without refretry) sometimes leaves one behind:
		// docs/reliability.md has the measurement.
		locks := lockFiles(r.GitDir, b.heldLock)
		if len(locks) > 0 && k.waiting {
			t.Errorf("SIGTERM while git waited for the held lock, yet locks were left: %v", locks)
		} else if len(locks) > 0 {
			t.Logf("faults: SIGTERM while git was taking its locks left %v (git's own behaviour)", locks)
		}
	}
}

// TestReliabilityKillMidInput kills refretry with SIGKILL while its caller is still
// writing a --stdin batch (the caller's pipe is open; half the batch has been sent).
// git update-ref killed the same way applies nothing, so refretry must not either: the
// caller never ended its input. (refretry's git outlives it and reads end-of-file; the
// input it was given never ends on a complete command, so it commits nothing.)
func TestReliabilityKillMidInput(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		for _, name := range []string{"git", "refretry"} {
			for _, z := range []bool{false, true} {
				form := "lines"
				if z {
					form = "z"
				}
				t.Run(bc.git.Name()+"/"+bc.backend+"/"+name+"/"+form, func(t *testing.T) {
					t.Parallel()
					r := testutil.NewRepo(t, bc.git, bc.backend)
					args := []string{"--stdin"}
					input := batchInput("refs/heads/half/", r.Commit, 10)
					if z {
						args = append(args, "-z")
						input = ""
						for i := range 10 {
							input += fmt.Sprintf("create refs/heads/half/%d\x00%s\x00", i, r.Commit)
						}
						input += "option no-deref\x00" // a one-field command last
					}
					cmd := refretryCommand(r, args...)
					if name == "git" {
						cmd = commandIn(r, r.Git.Path, append([]string{"update-ref"}, args...)...)
					}
					stdin, _ := cmd.StdinPipe()
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					io.WriteString(stdin, input)
					exited := make(chan struct{})
					go func() { cmd.Wait(); close(exited) }()
					gitPID := cmd.Process.Pid
					if name == "refretry" {
						gitPID = gitChild(cmd, exited)
					}
					waitReading(t, gitPID) // git has read what it was given
					cmd.Process.Kill()
					<-exited
					waitGone(t, gitPID)
					stdin.Close()
					if refs := r.Refs("refs/heads/half/"); len(refs) != 0 {
						t.Errorf("%s killed before its input ended, yet %d refs were written", name, len(refs))
					}
				})
			}
		}
	}
}

// TestReliabilityStoppedHolder: a real git holds the lock in the prepared state and is
// stopped (SIGSTOP). refretry waits and gives up at its deadline, never touching the
// lock, even with --break-stale-locks and a lock older than --stale-after; once the
// holder continues and aborts, refretry succeeds.
func TestReliabilityStoppedHolder(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		for _, mode := range []string{"gives-up", "continued", "break-refused"} {
			if mode == "break-refused" && !bc.git.AtLeast(2, 54) {
				continue // core.lockfilePid is new in 2.54
			}
			t.Run(bc.git.Name()+"/"+bc.backend+"/"+mode, func(t *testing.T) {
				t.Parallel()
				r := testutil.NewRepo(t, bc.git, bc.backend)
				ref := "refs/heads/stopped"
				var cfg []string
				if mode == "break-refused" {
					cfg = []string{"core.lockfilePid=true"}
				}
				other := r.NewCommit("second") // before the lock is taken
				h := hold(t, r, cfg, fmt.Sprintf("create %s %s\n", ref, r.Commit))
				lock := r.LockPath(ref)
				fi, err := os.Stat(lock)
				if err != nil {
					t.Fatalf("the holder holds no %s: %v", lock, err)
				}
				pid := h.cmd.Process.Pid
				syscall.Kill(pid, syscall.SIGSTOP)
				defer func() {
					syscall.Kill(pid, syscall.SIGCONT)
					h.abort(t)
					if _, err := os.Stat(lock); err == nil {
						t.Errorf("the holder's lock outlived it")
					}
					if refs := r.Refs(ref); len(refs) != 0 && mode != "continued" {
						t.Errorf("ref written: %v", refs)
					}
				}()
				args := []string{"--timeout", "3s", ref, other}
				var letGo func() // when set, the lock is let go once refretry has met it
				switch mode {
				case "continued":
					args = []string{"--timeout", "60s", ref, other}
					letGo = func() {
						syscall.Kill(pid, syscall.SIGCONT)
						h.release()
					}
				case "break-refused":
					args = []string{"--break-stale-locks", "--stale-after", "1s", "--timeout", "20s", ref, other}
					old := time.Now().Add(-time.Hour) // far older than --stale-after
					if err := os.Chtimes(lock, old, old); err != nil {
						t.Fatal(err)
					}
				}
				var res result
				if letGo != nil {
					res = runHeld(t, r, "", letGo, args...)
				} else {
					res = runIn(t, r, "", "refretry", args...)
				}
				lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
				last := lines[len(lines)-1]
				switch mode {
				case "gives-up":
					if res.code != 128 || !strings.HasPrefix(last, "refretry: gave up after ") || !strings.Contains(last, "(deadline); last failure: lock-contention") {
						t.Errorf("exit %d, last line %q; want 128 and a deadline give-up", res.code, last)
					}
				case "continued":
					if res.code != 0 || !strings.Contains(res.stderr, "refretry: attempt 1 failed (lock-contention") {
						t.Errorf("exit %d, stderr %q; want success after a retry", res.code, res.stderr)
					}
					if got := r.Refs(ref)[ref]; got != other {
						t.Errorf("%s = %q, want %s", ref, got, other)
					}
				case "break-refused":
					want := fmt.Sprintf("(not removed: its ~pid.lock names process %d, which is running)", pid)
					if res.code != 128 || !strings.HasPrefix(last, "refretry: stale lock "+lock) || !strings.Contains(last, want) {
						t.Errorf("exit %d, last line %q; want 128 and a stale-lock report containing %q", res.code, last, want)
					}
					if strings.Contains(res.stderr, "removed stale lock") {
						t.Errorf("a live holder's lock was removed: %q", res.stderr)
					}
				}
				if mode != "continued" {
					if fi2, err := os.Stat(lock); err != nil || !os.SameFile(fi, fi2) {
						t.Errorf("the stopped holder's lock was touched: %v", err)
					}
				}
			})
		}
	}
}

// killedHolder leaves the lock of a git killed with SIGKILL while prepared, with or
// without its ~pid.lock, and returns the lock and the dead pid.
func killedHolder(t *testing.T, r *testutil.Repo, ref string, pidFile bool) (string, int) {
	t.Helper()
	var cfg []string
	if pidFile {
		cfg = []string{"core.lockfilePid=true"}
	}
	h := hold(t, r, cfg, fmt.Sprintf("create %s %s\n", ref, r.Commit))
	h.cmd.Process.Kill()
	h.cmd.Wait()
	lock := r.LockPath(ref)
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("SIGKILL left no %s: %v", lock, err)
	}
	pf := strings.TrimSuffix(lock, ".lock") + "~pid.lock"
	if _, err := os.Stat(pf); (err == nil) != pidFile {
		t.Fatalf("%s exists: %v, want %v", pf, err == nil, pidFile)
	}
	return lock, h.cmd.Process.Pid
}

// TestReliabilityKilledHolder: a lock left by a git killed with SIGKILL. With
// core.lockfilePid its ~pid.lock names a pid that is not running here, which alone
// proves nothing (a holder in another pid namespace looks the same): refretry retries
// until the lock is older than --pid-grace (2 s here, against an --stale-after of an
// hour), then stops with git's message and one stale-lock line giving that evidence.
// Without it, refretry retries until the lock is older than --stale-after, then stops
// the same way. Either way, nothing is written and the lock stays for the user to
// inspect.
func TestReliabilityKilledHolder(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		for _, pidFile := range []bool{true, false} {
			if pidFile && !bc.git.AtLeast(2, 54) {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s/pidfile=%v", bc.git.Name(), bc.backend, pidFile), func(t *testing.T) {
				t.Parallel()
				r := testutil.NewRepo(t, bc.git, bc.backend)
				ref := "refs/heads/dead"
				lock, pid := killedHolder(t, r, ref, pidFile)
				limits := []string{"--stale-after", "2s"}
				if pidFile {
					limits = []string{"--stale-after", "1h", "--pid-grace", "2s"}
				}
				res := runIn(t, r, "", "refretry", append(limits, "--timeout", "60s", ref, r.Commit)...)
				lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
				last := lines[len(lines)-1]
				if res.code != 128 || !strings.HasPrefix(last, "refretry: stale lock "+lock) {
					t.Fatalf("exit %d, stderr %q; want 128 and a stale-lock report", res.code, res.stderr)
				}
				if pidFile {
					want := fmt.Sprintf("holder pid %d): its holder, process %d (from the ~pid.lock file), is not running here, and the lock is older than the pid grace of 2s", pid, pid)
					if !strings.Contains(last, want) {
						t.Errorf("last line %q: want %q", last, want)
					}
				} else if !strings.Contains(last, "older than the stale-after limit of 2s") {
					t.Errorf("last line %q: want the age limit as the reason", last)
				}
				// Before refretry's last line: git's message, after any retry lines.
				gitLines := 0
				for _, l := range lines[:len(lines)-1] {
					if strings.HasPrefix(l, "refretry: attempt ") && gitLines == 0 {
						continue
					}
					if gitLines == 0 && !strings.HasPrefix(l, "fatal: update_ref failed for ref '"+ref+"': ") {
						t.Errorf("line %q: want git's message", l)
					}
					gitLines++
				}
				if gitLines == 0 {
					t.Errorf("stderr %q: no message from git", res.stderr)
				}
				if _, err := os.Stat(lock); err != nil {
					t.Errorf("the lock was removed without --break-stale-locks")
				}
				if refs := r.Refs(ref); len(refs) != 0 {
					t.Errorf("ref written: %v", refs)
				}
			})
		}
	}
}

// TestBreakStaleLocksEndToEnd: with --break-stale-locks (or its environment variable
// or git config), the lock of a killed git is removed, with one line naming what was
// removed and why, and the update is retried and applied.
func TestBreakStaleLocksEndToEnd(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		for _, how := range []string{"flag", "env", "config"} {
			for _, pidFile := range []bool{true, false} {
				if pidFile && !bc.git.AtLeast(2, 54) {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%s/pidfile=%v", bc.git.Name(), bc.backend, how, pidFile), func(t *testing.T) {
					t.Parallel()
					r := testutil.NewRepo(t, bc.git, bc.backend)
					ref := "refs/heads/broken"
					lock, pid := killedHolder(t, r, ref, pidFile)
					// Older than the stale-after limit and the pid grace (2m both).
					old := time.Now().Add(-time.Hour)
					os.Chtimes(lock, old, old)
					cmd := refretryCommand(r, "--timeout", "60s", ref, r.Commit)
					switch how {
					case "flag":
						cmd.Args = append([]string{cmd.Args[0], "--break-stale-locks"}, cmd.Args[1:]...)
					case "env":
						cmd.Env = append(cmd.Env, "REFRETRY_BREAK_STALE_LOCKS=1")
					case "config":
						r.Run("config", "refretry.breakStaleLocks", "true")
					}
					var out, errOut bytes.Buffer
					cmd.Stdout, cmd.Stderr = &out, &errOut
					code := exitCode(t, cmd.Run())
					want := "refretry: removed stale lock '" + lock + "'"
					if pidFile {
						want += fmt.Sprintf(" and '%s~pid.lock'", strings.TrimSuffix(lock, ".lock"))
					}
					want += " (age 1h0m"
					lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
					if code != 0 || out.Len() != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], want) ||
						!strings.HasPrefix(lines[1], "refretry: attempt 1 failed (") {
						t.Fatalf("exit %d, stdout %q, stderr %q; want 0, a line starting %q and one retry", code, out.String(), errOut.String(), want)
					}
					if pidFile && !strings.Contains(lines[0], fmt.Sprintf("holder pid %d): its holder, process %d (from the ~pid.lock file), is not running here, and the lock is older than the pid grace of 2m0s", pid, pid)) {
						t.Errorf("line %q: want the dead holder's pid and the reason", lines[0])
					}
					if !pidFile && !strings.HasSuffix(lines[0], "): it is older than the stale-after limit of 2m0s; retrying") {
						t.Errorf("line %q: want the age limit as the reason", lines[0])
					}
					if got := r.Refs(ref)[ref]; got != r.Commit {
						t.Errorf("%s = %q after the retry, want %s", ref, got, r.Commit)
					}
					if locks := lockFiles(r.GitDir); len(locks) > 0 {
						t.Errorf("locks left: %v", locks)
					}
				})
			}
		}
	}
}

// TestBreakStaleLocksLiveHolder: a young lock of a live (running, prepared) git is
// never removed by --break-stale-locks: refretry waits, and succeeds once the holder
// aborts.
func TestBreakStaleLocksLiveHolder(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			ref := "refs/heads/live"
			other := r.NewCommit("second") // before the lock is taken
			h := hold(t, r, nil, fmt.Sprintf("create %s %s\n", ref, r.Commit))
			lock := r.LockPath(ref)
			fi, _ := os.Stat(lock)
			res := runHeld(t, r, "", func() {
				if fi2, err := os.Stat(lock); err != nil || !os.SameFile(fi, fi2) {
					t.Errorf("the live holder's lock was touched: %v", err)
				}
				h.release()
			}, "--break-stale-locks", "--timeout", "60s", ref, other)
			h.abort(t)
			if res.code != 0 || strings.Contains(res.stderr, "removed stale lock") || !strings.Contains(res.stderr, "refretry: attempt 1 failed (lock-contention") {
				t.Errorf("exit %d, stderr %q; want success after a retry, nothing removed", res.code, res.stderr)
			}
			if got := r.Refs(ref)[ref]; got != other {
				t.Errorf("%s = %q, want %s", ref, got, other)
			}
		})
	}
}

// letGoWhen runs release once seen reports true (it is asked every 10 ms) and 300 ms
// more have passed: a lock refretry meets is let go only after refretry has met it,
// however late refretry got going on a loaded machine. The function it returns, called
// once refretry has exited, runs release at once if it has not run, and reports
// whether it ran while refretry waited.
func letGoWhen(seen func() bool, release func()) (ended func() (onTime bool)) {
	stop := make(chan struct{})
	done := make(chan bool, 1)
	go func() {
		for !seen() {
			select {
			case <-stop:
				release()
				done <- false
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
		time.Sleep(300 * time.Millisecond)
		release()
		done <- true
	}()
	return func() bool { close(stop); return <-done }
}

// letGoAfterRetry is letGoWhen for refretry's stderr: once it says its first attempt
// failed.
func letGoAfterRetry(stderr *syncBuffer, release func()) (ended func() (onTime bool)) {
	return letGoWhen(func() bool { return strings.Contains(stderr.String(), "refretry: attempt 1 failed") }, release)
}

// letGoAfterLogged is letGoWhen for refretry's --log-file: once it records an attempt
// (attempts are recorded as they end; the first that ends before the lock is let go
// failed on it).
func letGoAfterLogged(logFile string, release func()) (ended func() (onTime bool)) {
	return letGoWhen(func() bool {
		b, _ := os.ReadFile(logFile)
		return bytes.Contains(b, []byte(`"msg":"attempt"`))
	}, release)
}

// runHeld is runIn for refretry while a lock it meets is held: release runs once
// refretry's first attempt has failed (letGoAfterRetry), and the test fails if
// refretry ended before that.
func runHeld(t *testing.T, r *testutil.Repo, stdin string, release func(), args ...string) result {
	t.Helper()
	cmd := refretryCommand(r, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	var errOut syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	let := letGoAfterRetry(&errOut, release)
	code := exitCode(t, cmd.Run())
	if !let() {
		t.Errorf("refretry ended before the lock was let go: exit %d, stderr %q", code, errOut.String())
	}
	return result{out.String(), errOut.String(), code}
}

// unseenPID names no process: it is above the kernel's PID_MAX_LIMIT (as in the
// fixtures of scripts/capture-fixtures.sh).
const unseenPID = 4194304

// TestYoungLockUnseenHolder (#15, the measured case): a new lock whose ~pid.lock names
// a pid no process here has. git 2.55 calls its holder "no longer running"; so would a
// live holder in another container look. With or without --break-stale-locks,
// refretry neither removes the lock nor stops: it retries, and the update lands once
// the holder lets the lock go.
func TestYoungLockUnseenHolder(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		for _, breaking := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/%s/break=%v", bc.git.Name(), bc.backend, breaking), func(t *testing.T) {
				t.Parallel()
				r := testutil.NewRepo(t, bc.git, bc.backend)
				ref := "refs/heads/x"
				lock := r.LockPath(ref)
				release := r.Hold(lock)
				pidFile := strings.TrimSuffix(lock, ".lock") + "~pid.lock"
				if err := os.WriteFile(pidFile, []byte(fmt.Sprintf("pid %d\n", unseenPID)), 0o644); err != nil {
					t.Fatal(err)
				}
				fi, _ := os.Stat(lock)
				args := []string{"--timeout", "60s", ref, r.Commit}
				if breaking {
					args = append([]string{"--break-stale-locks"}, args...)
				}
				res := runHeld(t, r, "", func() {
					if fi2, err := os.Stat(lock); err != nil || !os.SameFile(fi, fi2) {
						t.Errorf("the lock was touched: %v", err)
					}
					os.Remove(pidFile)
					release()
				}, args...)
				if res.code != 0 || res.stdout != "" || strings.Contains(res.stderr, "stale lock") ||
					!strings.HasPrefix(res.stderr, "refretry: attempt 1 failed (lock-contention on "+lock+"); retrying in ") {
					t.Errorf("exit %d, stdout %q, stderr %q; want success after retries, no stale lock", res.code, res.stdout, res.stderr)
				}
				for _, line := range strings.Split(strings.TrimSpace(res.stderr), "\n") {
					if !strings.HasPrefix(line, "refretry: attempt ") {
						t.Errorf("line %q: want only retry lines", line)
					}
				}
				if got := r.Refs(ref)[ref]; got != r.Commit {
					t.Errorf("%s = %q, want %s", ref, got, r.Commit)
				}
			})
		}
	}
}

// unshareCommand is unshare(1) when it can make a pid namespace here (it needs root,
// or a user namespace); the test is skipped otherwise.
func unshareCommand(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("unshare")
	if err != nil {
		t.Skipf("no unshare(1) to make a pid namespace: %v", err)
	}
	if out, err := exec.Command(path, "--pid", "--fork", "true").CombinedOutput(); err != nil {
		t.Skipf("unshare --pid --fork is not permitted here (%v): %s", err, out)
	}
	return path
}

// freePID is a pid that no process in this pid namespace has, above the few a fresh
// namespace uses by itself, and as far as can be from being given to a new process
// here during the test (pid_max is often only 32768).
func freePID(t *testing.T) int {
	t.Helper()
	max := 32768
	if b, err := os.ReadFile("/proc/sys/kernel/pid_max"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			max = n
		}
	}
	// pids are handed out in increasing order from the last one given, wrapping at
	// pid_max: a free pid just below the last one is the last to be given again.
	last := max - 1
	if b, err := os.ReadFile("/proc/sys/kernel/ns_last_pid"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n > 1 {
			last = n
		}
	}
	for k := 1; k < max/2; k++ {
		pid := (last - k + max) % max
		if pid > 300 && platform.ProcessGone(pid) {
			return pid
		}
	}
	t.Skip("no free pid found")
	return 0
}

// holdInPIDNamespace is hold with core.lockfilePid, in a new pid namespace: a shell
// there (pid 1) sets the namespace's last pid so that git gets a pid no process here
// has, and runs it. It returns the holder and the pid its ~pid.lock names.
func holdInPIDNamespace(t *testing.T, unshare string, r *testutil.Repo, ref, commands string) (*holder, int) {
	t.Helper()
	want := freePID(t)
	cmd := commandIn(r, unshare, "--pid", "--fork", "sh", "-c",
		`echo "$0" >/proc/sys/kernel/ns_last_pid && "$1" -c core.lockfilePid=true update-ref --stdin`,
		strconv.Itoa(want-1), r.Git.Path)
	h := holdWith(t, cmd, commands)
	b, err := os.ReadFile(strings.TrimSuffix(r.LockPath(ref), ".lock") + "~pid.lock")
	if err != nil {
		h.abort(t)
		t.Fatalf("the holder wrote no ~pid.lock: %v", err)
	}
	if got := strings.TrimSpace(string(b)); got != fmt.Sprintf("pid %d", want) || !platform.ProcessGone(want) {
		h.abort(t)
		t.Skipf("the holder's ~pid.lock says %q, want pid %d, a pid not running here", got, want)
	}
	return h, want
}

// TestLiveHolderOtherPIDNamespace (#15): a live git holding a ref lock, with
// core.lockfilePid, in another pid namespace than refretry's, as when two containers
// share a repository on a volume. Its ~pid.lock names a pid that refretry's namespace
// does not have, so the holder looks gone (to git's kill(pid, 0) as to refretry's).
// With --break-stale-locks and the lock aged to just under --stale-after, refretry
// never removes it: it waits, and its update lands once the holder lets go. Both ways
// round: the holder in a new pid namespace, and refretry in one (as in a container),
// where its final line also says that holders elsewhere cannot be seen from there.
func TestLiveHolderOtherPIDNamespace(t *testing.T) {
	t.Parallel()
	unshare := unshareCommand(t)
	for _, bc := range backends(t) {
		if !bc.git.AtLeast(2, 54) {
			continue // core.lockfilePid is new in 2.54
		}
		for _, where := range []string{"holder", "refretry"} {
			t.Run(bc.git.Name()+"/"+bc.backend+"/"+where+"-in-new-namespace", func(t *testing.T) {
				t.Parallel()
				r := testutil.NewRepo(t, bc.git, bc.backend)
				ref := "refs/heads/shared"
				other := r.NewCommit("second") // before the lock is taken
				commands := fmt.Sprintf("create %s %s\n", ref, r.Commit)
				var h *holder
				var pid int
				refretry := func(args ...string) result {
					return runIn(t, r, "", "refretry", args...)
				}
				if where == "holder" {
					h, pid = holdInPIDNamespace(t, unshare, r, ref, commands)
				} else {
					h = hold(t, r, []string{"core.lockfilePid=true"}, commands)
					pid = h.cmd.Process.Pid
					refretry = func(args ...string) result {
						cmd := commandIn(r, unshare, append([]string{"--pid", "--fork", binary}, args...)...)
						var out, errOut bytes.Buffer
						cmd.Stdout, cmd.Stderr = &out, &errOut
						code := exitCode(t, cmd.Run())
						return result{out.String(), errOut.String(), code}
					}
				}
				lock := r.LockPath(ref)
				almost := time.Now().Add(-9 * time.Minute) // --stale-after is 10m below
				if err := os.Chtimes(lock, almost, almost); err != nil {
					t.Fatal(err)
				}
				fi, _ := os.Stat(lock)
				untouched := func(when string) {
					if fi2, err := os.Stat(lock); err != nil || !os.SameFile(fi, fi2) {
						t.Errorf("%s: the live holder's lock was touched: %v", when, err)
					}
				}
				limits := []string{"--break-stale-locks", "--stale-after", "10m"}

				// A budget shorter than the hold: refretry gives up and says why it
				// waited for a lock whose holder it cannot see.
				res := refretry(append(limits, "--timeout", "3s", ref, other)...)
				lines := strings.Split(strings.TrimSpace(res.stderr), "\n")
				last := lines[len(lines)-1]
				want := fmt.Sprintf("refretry: lock %s (age 9m", lock)
				why := fmt.Sprintf(", holder pid %d): its holder, process %d (from the ~pid.lock file), is not running here, "+
					"but the lock is younger than the pid grace of 10m0s, and a live holder in another pid namespace looks the same from here", pid, pid)
				note := "; refretry runs in a container's pid namespace, where a holder in another container or on the host cannot be seen"
				if res.code != 128 || !strings.HasPrefix(last, want) || !strings.Contains(last, why) ||
					(where == "refretry") != strings.HasSuffix(last, note) || strings.Contains(res.stderr, "stale lock") {
					t.Errorf("exit %d, stderr %q; want 128 and a last line %q…%q (container note %v)", res.code, res.stderr, want, why, where == "refretry")
				}
				untouched("after giving up")

				// A budget longer than the hold: refretry waits, and its update lands.
				logFile := filepath.Join(t.TempDir(), "log")
				let := letGoAfterLogged(logFile, func() {
					untouched("while waiting")
					h.release()
				})
				res = refretry(append(limits, "--timeout", "60s", "--log-file", logFile, ref, other)...)
				if !let() {
					t.Errorf("refretry ended before the holder let the lock go")
				}
				h.abort(t)
				if res.code != 0 || strings.Contains(res.stderr, "stale lock") || !strings.Contains(res.stderr, "refretry: attempt 1 failed (lock-contention") {
					t.Errorf("exit %d, stderr %q; want success after retries, nothing removed", res.code, res.stderr)
				}
				if got := r.Refs(ref)[ref]; got != other {
					t.Errorf("%s = %q, want %s", ref, got, other)
				}
				record := fmt.Sprintf(`"holder_pid":%d,"holder_unseen":true`, pid)
				if where == "refretry" {
					record += `,"pid_namespace":"container"`
				}
				if b, _ := os.ReadFile(logFile); !strings.Contains(string(b), record) {
					// pid_max is often 32768: under heavy process churn the holder's pid
					// may be given to a process here meanwhile, which then looks like
					// the holder. Only then may the record lack holder_unseen.
					if where == "holder" && !platform.ProcessGone(pid) {
						t.Logf("pid %d was reused here during the run; its record is not checked", pid)
					} else {
						t.Errorf("log file lacks %s:\n%s", record, b)
					}
				}
			})
		}
	}
}

// TestReliabilityHook: a reference-transaction hook that fails is not retried: refretry
// prints exactly what git prints (on an identical copy of the repository), exits as
// git does, and changes nothing. A hook that sleeps while holding the locks makes a
// concurrent refretry wait and retry; its compare-and-swap then sees the first
// writer's committed value.
func TestReliabilityHook(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend+"/fails", func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			writeHook(t, r, `if [ "$1" = prepared ]; then echo "hook says no" >&2; exit 1; fi`)
			c := r.Clone()
			for _, tc := range []struct {
				stdin string
				args  []string
			}{
				{"", []string{"refs/heads/h", r.Commit}},
				{"", []string{"-d", "refs/heads/main"}},
				{"create refs/heads/h1 " + r.Commit + "\ncreate refs/heads/h2 " + r.Commit + "\n", []string{"--stdin"}},
			} {
				want := sameDir(runIn(t, c, tc.stdin, "git", tc.args...), c, r)
				got := runIn(t, r, tc.stdin, "refretry", tc.args...)
				if got != want || !strings.Contains(got.stderr, "aborted by") || strings.Contains(got.stderr, "refretry:") {
					t.Errorf("%v: refretry %+v, git %+v", tc.args, got, want)
				}
				if refs := r.Refs("refs/heads/"); len(refs) != 1 || refs["refs/heads/main"] != r.Commit {
					t.Errorf("%v: refs changed: %v", tc.args, refs)
				}
			}
		})
		t.Run(bc.git.Name()+"/"+bc.backend+"/sleeps", func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			dir := t.TempDir()
			ready := filepath.Join(dir, "ready")
			done := ready + ".done"
			// The first writer's hook holds the locks until the test lets it go: once
			// refretry's first attempt has failed on them (runHeld).
			writeHook(t, r, `if [ "$1" = prepared ] && [ -n "$SLOW_HOOK" ]; then : > "$SLOW_HOOK"; while [ ! -e "$SLOW_HOOK.done" ]; do sleep 0.05; done; fi`)
			ref, second := "refs/heads/slow", r.NewCommit("second")
			first := commandIn(r, r.Git.Path, "update-ref", ref, r.Commit)
			first.Env = append(first.Env, "SLOW_HOOK="+ready)
			if err := first.Start(); err != nil {
				t.Fatal(err)
			}
			letGo := func() {
				if err := os.WriteFile(done, nil, 0o644); err != nil {
					t.Error(err)
				}
			}
			defer letGo()
			for _, err := os.Stat(ready); err != nil; _, err = os.Stat(ready) {
				time.Sleep(5 * time.Millisecond)
			}
			res := runHeld(t, r, "", letGo, "--timeout", "60s", ref, second, r.Commit)
			if err := first.Wait(); err != nil {
				t.Fatalf("first writer: %v", err)
			}
			if res.code != 0 || res.stdout != "" || !strings.Contains(res.stderr, "refretry: attempt 1 failed (lock-contention") {
				t.Errorf("exit %d, stdout %q, stderr %q; want success after a retry", res.code, res.stdout, res.stderr)
			}
			if got := r.Refs(ref)[ref]; got != second {
				t.Errorf("%s = %q, want %s", ref, got, second)
			}
		})
	}
}

func writeHook(t *testing.T, r *testutil.Repo, body string) {
	t.Helper()
	dir := filepath.Join(r.GitDir, "hooks")
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, "reference-transaction"), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestReliabilityFullDisk simulates a full disk without touching the machine: git runs
// under a wrapper that sets RLIMIT_FSIZE to zero with SIGXFSZ ignored, so every write
// fails with EFBIG as it would with ENOSPC. refretry must not retry it: stdout, stderr
// and exit code equal git's under the same wrapper (on an identical copy), and no ref
// or lock is left.
func TestReliabilityFullDisk(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			wrapper := filepath.Join(t.TempDir(), "git-full-disk")
			script := fmt.Sprintf("#!/bin/sh\ntrap '' XFSZ\nulimit -f 0\nexec %s \"$@\"\n", platform.ShellQuote(bc.git.Path))
			if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			full := *r
			full.Git.Path = wrapper
			c := full.Clone()
			for _, tc := range []struct {
				stdin string
				args  []string
			}{
				{"", []string{"refs/heads/f", r.Commit}},
				{batchInput("refs/heads/fb/", r.Commit, 20), []string{"--stdin"}},
			} {
				want := sameDir(runIn(t, c, tc.stdin, "git", tc.args...), c, r)
				got := runIn(t, &full, tc.stdin, "refretry", tc.args...)
				if want.code == 0 {
					t.Fatalf("%v: git succeeded with no room to write; the simulation does not work here", tc.args)
				}
				if got != want || strings.Contains(got.stderr, "refretry:") {
					t.Errorf("%v: refretry %+v\ngit %+v", tc.args, got, want)
				}
				if refs := r.Refs("refs/heads/"); len(refs) != 1 {
					t.Errorf("%v: refs changed: %v", tc.args, refs)
				}
				if locks := lockFiles(r.GitDir); len(locks) > 0 {
					t.Errorf("%v: locks left: %v", tc.args, locks)
				}
			}
		})
	}
}

// TestReliabilityReadOnly makes the directory a writer must create its lock in
// read-only. The failure is not lock contention: refretry prints exactly what git
// prints, exits as git does, and changes nothing. Root ignores mode bits, so as root
// the processes run as nobody (from copies of git and refretry that nobody can reach);
// the test is skipped if the mode still has no effect.
func TestReliabilityReadOnly(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			tester := newTester(t, bc)
			r := testutil.NewRepo(t, bc.git, bc.backend)
			c := r.Clone()
			tester.adopt(t, r)
			tester.adopt(t, c)
			dir := filepath.Join(r.GitDir, "refs", "heads")
			cdir := filepath.Join(c.GitDir, "refs", "heads")
			if bc.backend == "reftable" {
				dir, cdir = filepath.Join(r.GitDir, "reftable"), filepath.Join(c.GitDir, "reftable")
			}
			for _, d := range []string{dir, cdir} {
				if err := os.Chmod(d, 0o555); err != nil {
					t.Fatal(err)
				}
				defer os.Chmod(d, 0o755)
			}
			probe := tester.command(exec.Command("touch", filepath.Join(dir, "probe")))
			if probe.Run() == nil {
				os.Remove(filepath.Join(dir, "probe"))
				t.Skip("chmod 0555 does not stop this user from writing: nothing to test")
			}
			for _, args := range [][]string{{"refs/heads/ro", r.Commit}, {"-d", "refs/heads/main"}} {
				want := sameDir(tester.run(t, c, tester.git, append([]string{"update-ref"}, args...)...), c, r)
				got := tester.run(t, r, tester.refretry, args...)
				t.Logf("%v: git exit %d, stderr %q", args, want.code, want.stderr)
				if want.code == 0 || want.stderr == "" || got != want || strings.Contains(got.stderr, "refretry:") {
					t.Errorf("%v: refretry %+v\ngit %+v", args, got, want)
				}
				if refs := tester.checker(r).Refs("refs/heads/"); len(refs) != 1 || refs["refs/heads/main"] != r.Commit {
					t.Errorf("%v: refs changed: %v", args, refs)
				}
			}
		})
	}
}

// checker is r for the test's own git commands, which run as the test's user: a
// repository the tester owns is then safe to read.
func (tr *tester) checker(r *testutil.Repo) *testutil.Repo {
	c := *r
	c.Env = append(slices.Clip(r.Env), "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*")
	return &c
}

// tester runs processes as a user that mode bits apply to: nobody when the tests run
// as root, else the current user.
type tester struct {
	drop          bool
	uid, gid      int
	git, refretry string
}

func newTester(t *testing.T, bc backendCase) *tester {
	t.Helper()
	tr := &tester{git: bc.git.Path, refretry: binary}
	if os.Geteuid() != 0 {
		return tr
	}
	tr.drop, tr.uid, tr.gid = true, 65534, 65534
	// git and refretry may live where nobody cannot reach (/root): copy them. git's
	// update-ref and config are built in, so the git binary alone is enough.
	dir, err := os.MkdirTemp("", "refretry-ro-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	tr.git, tr.refretry = filepath.Join(dir, "git"), filepath.Join(dir, "refretry")
	for src, dst := range map[string]string{bc.git.Path: tr.git, binary: tr.refretry} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// adopt makes r usable by the tester: the path down to it searchable, and r and its
// home owned by the tester.
func (tr *tester) adopt(t *testing.T, r *testutil.Repo) {
	t.Helper()
	if !tr.drop {
		return
	}
	home := ""
	for _, kv := range r.Env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	for d := filepath.Dir(r.Dir); d != "/" && d != filepath.Clean(os.TempDir()); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	for _, p := range []string{r.Dir, home} {
		filepath.Walk(p, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, tr.uid, tr.gid) })
	}
}

func (tr *tester) command(cmd *exec.Cmd) *exec.Cmd {
	if tr.drop {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(tr.uid), Gid: uint32(tr.gid)}}
	}
	return cmd
}

// run runs path with args in r as the tester, refretry pointed at the tester's git.
func (tr *tester) run(t *testing.T, r *testutil.Repo, path string, args ...string) result {
	t.Helper()
	cmd := tr.command(exec.Command(path, args...))
	cmd.Dir, cmd.Env = r.Dir, append(slices.Clip(r.Env), "REFRETRY_GIT="+tr.git)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	code := exitCode(t, cmd.Run())
	return result{out.String(), errOut.String(), code}
}

// sameDir rewrites a result from the clone c as if it came from r: git's messages name
// the repository's path.
func sameDir(res result, c, r *testutil.Repo) result {
	res.stdout = strings.ReplaceAll(res.stdout, c.Dir, r.Dir)
	res.stderr = strings.ReplaceAll(res.stderr, c.Dir, r.Dir)
	return res
}

// TestBreakStaleLocksBadValue: a value of REFRETRY_BREAK_STALE_LOCKS that is not a
// boolean is a usage error, reported before git runs; "0" turns the option off even
// when git config turns it on.
func TestBreakStaleLocksBadValue(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "files")
	cmd := refretryCommand(r, "refs/heads/x", r.Commit)
	cmd.Env = append(cmd.Env, "REFRETRY_BREAK_STALE_LOCKS=maybe")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	code := exitCode(t, cmd.Run())
	want := "refretry: REFRETRY_BREAK_STALE_LOCKS=\"maybe\": not a boolean such as 1, true, 0 or false\n"
	if code != 129 || out.Len() != 0 || errOut.String() != want {
		t.Errorf("exit %d, stdout %q, stderr %q; want 129 and %q", code, out.String(), errOut.String(), want)
	}
	if refs := r.Refs("refs/heads/x"); len(refs) != 0 {
		t.Errorf("ref written: %v", refs)
	}

	r.Run("config", "refretry.breakStaleLocks", "true")
	ref := "refs/heads/kept"
	lock := r.LockPath(ref)
	r.Hold(lock)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(lock, old, old)
	cmd = refretryCommand(r, ref, r.Commit)
	cmd.Env = append(cmd.Env, "REFRETRY_BREAK_STALE_LOCKS=0")
	errOut.Reset()
	cmd.Stderr = &errOut
	if code := exitCode(t, cmd.Run()); code != 128 || !strings.Contains(errOut.String(), "refretry: stale lock "+lock) {
		t.Errorf("exit %d, stderr %q; want 128 and the stale-lock report", code, errOut.String())
	}
	if _, err := os.Stat(lock); err != nil {
		t.Errorf("the lock was removed although REFRETRY_BREAK_STALE_LOCKS=0")
	}
}
