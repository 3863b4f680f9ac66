package main

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/group"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/platform"
)

// Tests of group commit (internal/group, docs/coalescing.md) against real git, with
// refretry (binary). Group commit is on by default for reftable; on the files backend
// the invocations here ask for it (REFRETRY_COALESCE=1).

// coalesceRun is one refretry invocation in a coalescing test.
type coalesceRun struct {
	args []string
	env  []string // added to the repository's environment
	res  result
	cmd  *exec.Cmd
	// started and ended are when its process started and when it was seen to end.
	started, ended time.Time
}

// rendezvous is where the repository's invocations meet: at its ref store.
func rendezvous(t *testing.T, r *testutil.Repo) string {
	t.Helper()
	dir := r.GitDir
	if r.Store != "" {
		dir = r.Store
	}
	n, ok := group.Name(dir)
	if !ok {
		t.Fatal("no rendezvous name")
	}
	return n
}

// holdLine takes the line, so that invocations started now all queue behind it;
// release hands it to the first of them, which leads everyone queued.
func holdLine(t *testing.T, r *testutil.Repo) (release func()) {
	t.Helper()
	l, err := platform.Listen(rendezvous(t, r))
	if err != nil {
		t.Fatal(err)
	}
	return func() { group.HandOver(l) }
}

// startCoalescing starts refretry for each run; wait waits for all of them and
// records their results.
func startCoalescing(t *testing.T, r *testutil.Repo, runs []*coalesceRun) (wait func()) {
	t.Helper()
	var done sync.WaitGroup
	for _, c := range runs {
		c.cmd = commandIn(r, binary, c.args...)
		if r.Backend == "files" {
			c.cmd.Env = append(c.cmd.Env, "REFRETRY_COALESCE=1")
		}
		c.cmd.Env = append(c.cmd.Env, c.env...)
		var out, errOut bytes.Buffer
		c.cmd.Stdout, c.cmd.Stderr = &out, &errOut
		c.started = time.Now()
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done.Add(1)
		go func() {
			defer done.Done()
			err := c.cmd.Wait()
			c.ended = time.Now()
			c.res = result{out.String(), errOut.String(), childExit(err)}
		}()
	}
	return done.Wait
}

func childExit(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// runAll starts the runs with the line held until every one of them is queued, then
// lets them go and waits for all.
//
// The wait in line counts against each run's budget, and the test, not a group,
// holds the line until the last run has queued. At the stress tier's size
// (testutil.Stress) that is 600 starts: on a 2-core machine 600 starts of the
// race-instrumented binary have taken 55 s, and the first runs then spent the
// default minute in line and ran alone, against each other. So there, and only
// there, the runs get a budget that the hold cannot use up (a run's own
// REFRETRY_TIMEOUT still wins); at the default size they keep refretry's default.
func runAll(t *testing.T, r *testutil.Repo, runs []*coalesceRun) {
	t.Helper()
	if testutil.Stress(t) {
		for _, c := range runs {
			c.env = append([]string{"REFRETRY_TIMEOUT=10m"}, c.env...)
		}
	}
	release := holdLine(t, r)
	wait := startCoalescing(t, r, runs)
	testutil.WaitQueued(t, rendezvous(t, r), len(runs))
	release()
	wait()
}

// gitProcesses installs a reference-transaction hook that records, for every
// committed transaction, the git process that ran it and how many updates it had;
// gits returns how many transactions each git committed.
func gitProcesses(t *testing.T, r *testutil.Repo) (gits func() map[string]int, updates func() []string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "hook.log")
	hook := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = committed ]; then echo \"$PPID $(wc -l)\" >>'%s'; fi\n", log)
	if err := os.WriteFile(filepath.Join(r.GitDir, "hooks", "reference-transaction"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	read := func() []string {
		b, err := os.ReadFile(log)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	gits = func() map[string]int {
		n := map[string]int{}
		for _, line := range read() {
			if pid, _, ok := strings.Cut(line, " "); ok {
				n[pid]++
			}
		}
		return n
	}
	updates = func() []string {
		var out []string
		for _, line := range read() {
			if _, k, ok := strings.Cut(line, " "); ok {
				out = append(out, k)
			}
		}
		return out
	}
	return gits, updates
}

// setRefs sets refs with one plain git transaction.
func setRefs(t *testing.T, r *testutil.Repo, refs map[string]string) {
	t.Helper()
	var in strings.Builder
	for ref, oid := range refs {
		fmt.Fprintf(&in, "update %s %s\n", ref, oid)
	}
	cmd := commandIn(r, r.Git.Path, "update-ref", "--stdin")
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("setting refs: %v\n%s", err, out)
	}
}

// mixedSeed seeds TestCoalesceMixed's order of invocations; 0 (the default) takes a
// new seed from the clock. The test logs the seed it used.
var mixedSeed = flag.Uint64("mixedseed", 0, "seed for TestCoalesceMixed's order of invocations (0: from the clock)")

// TestCoalesceMixed: 600 concurrent invocations at stress size, 40 by default
// (testutil.Scale): creates, updates, compare-and-swap updates, deletes, with two
// reflog messages, a known subset of which fail on stale old values. Exactly those fail, each with the bytes and exit code plain git gives
// for its own command; all others succeed silently; every ref ends as it should, its
// reflog has one entry per applied update, with its invocation's message; groups
// really formed (one git committed several transactions); and, as the repository has
// a reference-transaction hook, each transaction held one update, as from plain git.
// The invocations start in an order drawn from a seed it logs: -mixedseed=N draws it
// again.
func TestCoalesceMixed(t *testing.T) {
	t.Parallel()
	seed := *mixedSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -run 'TestCoalesceMixed$' -mixedseed=%d)", seed, seed)
	for k, bc := range backends(t) {
		// One source per backend: each draws the same order from the same seed,
		// whichever of them -run selects.
		rng := rand.New(rand.NewPCG(seed, uint64(k)))
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			r := testutil.NewRepo(t, bc.git, bc.backend)
			a, b := r.Commit, r.NewCommit("second")
			per := testutil.Scale(t, 4, 60)
			pre := map[string]string{}
			want := map[string]string{} // "" means absent
			msgs := map[string]string{}
			var runs []*coalesceRun
			fails := map[*coalesceRun]bool{}
			add := func(ref, after string, fail bool, args ...string) {
				c := &coalesceRun{args: args}
				runs = append(runs, c)
				want[ref] = after
				if fail {
					fails[c] = true
				}
			}
			for i := range 2 * per {
				ref := fmt.Sprintf("refs/heads/create/%d", i)
				msg := fmt.Sprintf("create %d", i%2)
				msgs[ref] = msg
				add(ref, a, false, "-m", msg, ref, a, "")
			}
			for i := range 2 * per {
				ref := fmt.Sprintf("refs/heads/update/%d", i)
				pre[ref] = a
				add(ref, b, false, ref, b)
			}
			for i := range 2 * per {
				ref := fmt.Sprintf("refs/heads/cas/%d", i)
				pre[ref] = a
				add(ref, b, false, "--create-reflog", ref, b, a)
			}
			for i := range 2 * per {
				ref := fmt.Sprintf("refs/heads/delete/%d", i)
				pre[ref] = a
				if i%2 == 0 {
					add(ref, "", false, "-d", ref)
				} else {
					add(ref, "", false, "-d", ref, a)
				}
			}
			for i := range per {
				ref := fmt.Sprintf("refs/heads/stale/%d", i)
				pre[ref] = a
				add(ref, a, true, ref, b, b) // expects b, is a
			}
			for i := range per {
				ref := fmt.Sprintf("refs/heads/stale-delete/%d", i)
				pre[ref] = a
				add(ref, a, true, "-d", ref, b)
			}
			if len(runs) != 10*per {
				t.Fatalf("%d runs", len(runs))
			}
			setRefs(t, r, pre)
			gits, updates := gitProcesses(t, r)
			rng.Shuffle(len(runs), func(i, j int) { runs[i], runs[j] = runs[j], runs[i] })
			runAll(t, r, runs)
			os.Remove(filepath.Join(r.GitDir, "hooks", "reference-transaction"))

			for _, c := range runs {
				if !fails[c] {
					if c.res != (result{}) {
						t.Errorf("%q: %+v, want success and no output", c.args, c.res)
					}
					continue
				}
				// The failure changed nothing, so plain git now says what it said.
				wantRes := runIn(t, r, "", "git", c.args...)
				if c.res != wantRes {
					t.Errorf("%q:\n got %+v\nwant %+v (plain git)", c.args, c.res, wantRes)
				}
				if wantRes.code != 128 && wantRes.code != 1 {
					t.Errorf("%q: plain git exited %d", c.args, wantRes.code)
				}
			}
			refs := r.Refs("refs/heads/")
			for ref, w := range want {
				if refs[ref] != w {
					t.Errorf("%s = %q, want %q", ref, refs[ref], w)
				}
			}
			for ref, msg := range msgs {
				if got := r.Run("reflog", "show", "--format=%gs", ref); got != msg {
					t.Errorf("%s: reflog %q, want one entry %q", ref, got, msg)
				}
			}
			for i := range 2 * per {
				ref := fmt.Sprintf("refs/heads/cas/%d", i)
				if n := len(strings.Split(r.Run("reflog", "show", "--format=%H", ref), "\n")); n != 2 {
					t.Errorf("%s: %d reflog entries, want 2 (set, then updated once)", ref, n)
				}
			}
			most := 0
			for _, n := range gits() {
				most = max(most, n)
			}
			if most < 2 {
				t.Errorf("no git committed more than one invocation's update: %v", gits())
			}
			for _, k := range updates() {
				if k != "1" {
					t.Errorf("a transaction with %s updates: the hook sees other invocations' updates", k)
					break
				}
			}
		})
	}
}

// killSeed seeds TestCoalesceKilled's choice of victims and kill moments; 0 (the
// default) takes a new seed from the clock. The test logs the seed it used.
var killSeed = flag.Uint64("killseed", 0, "seed for TestCoalesceKilled's victims and kill timings (0: from the clock)")

// TestCoalesceKilled kills three invocations of a group storm with SIGKILL at random
// moments (leaders and members alike), 20 times at stress size and 4 by default
// (testutil.Scale): nothing is lost or applied twice,
// and every invocation that survived reports what the repository shows. The victims
// and moments come from a seed it logs: -killseed=N draws them again (the moments
// then land where the machine's scheduling puts them, near enough to replay most
// failures).
func TestCoalesceKilled(t *testing.T) {
	t.Parallel()
	seed := *killSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -run 'TestCoalesceKilled$' -killseed=%d)", seed, seed)
	g := testutil.NewGit(t)
	for run := range testutil.Scale(t, 4, 20) {
		backend := []string{"reftable", "files"}[run%2]
		// One source per run: the runs are parallel, and each draws the same
		// numbers from the same seed whatever the others do.
		rng := rand.New(rand.NewPCG(seed, uint64(run)))
		t.Run(fmt.Sprintf("%s/%d", backend, run), func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, backend)
			other := r.NewCommit("second")
			const n = 30
			var runs []*coalesceRun
			refs := make([]string, n)
			for i := range n {
				refs[i] = fmt.Sprintf("refs/heads/k/%d", i)
				args := []string{refs[i], r.Commit, ""} // create: must not exist
				if i%3 == 0 {
					args = []string{refs[i], other} // plain update of a ref that exists
				}
				runs = append(runs, &coalesceRun{args: args})
			}
			pre := map[string]string{}
			for i := 0; i < n; i += 3 {
				pre[refs[i]] = r.Commit
			}
			setRefs(t, r, pre)
			release := holdLine(t, r)
			wait := startCoalescing(t, r, runs)
			testutil.WaitQueued(t, rendezvous(t, r), n)
			victims := map[int]bool{}
			var order []int // victims in the order drawn: a map's order is not the seed's
			for len(victims) < 3 {
				if v := rng.IntN(n); !victims[v] {
					victims[v] = true
					order = append(order, v)
				}
			}
			delays := make([]time.Duration, len(order))
			for i := range delays {
				delays[i] = time.Duration(rng.IntN(4000)) * time.Microsecond
			}
			t.Logf("killing %v after %v", order, delays)
			release()
			for i, v := range order {
				time.Sleep(delays[i])
				syscall.Kill(runs[v].cmd.Process.Pid, syscall.SIGKILL)
			}
			wait()
			got := r.Refs("refs/heads/k/")
			// The reflog entries of every ref there, with one git.
			logged := map[string]int{}
			if len(got) > 0 {
				args := []string{"log", "-g", "--format=%gD"}
				for ref := range got {
					args = append(args, ref)
				}
				for _, entry := range strings.Split(r.Run(args...), "\n") {
					ref, _, _ := strings.Cut(entry, "@{")
					logged[ref]++
				}
			}
			for i, c := range runs {
				after := r.Commit
				if i%3 == 0 {
					after = other
				}
				applied := got[refs[i]] == after
				// One reflog entry per applied update, after the one of setRefs.
				entries := logged[refs[i]]
				if i%3 == 0 {
					entries--
				}
				if applied && entries != 1 || !applied && entries != 0 {
					t.Errorf("%s: applied %v with %d reflog entries", refs[i], applied, entries)
				}
				if victims[i] {
					continue // its outcome is unknown to its caller, as with a killed git
				}
				if c.res.code != 0 || !applied {
					t.Errorf("%s: %+v, applied %v; want success", refs[i], c.res, applied)
				}
			}
		})
	}
}

// TestCoalesceSameRef: compare-and-swap updates of one ref from many processes are
// applied in some serial order, each CAS honoured: the ones that succeed form the
// chain c1, c2, …, ck in the reflog, and every other one fails with git's message
// naming the value it expected.
func TestCoalesceSameRef(t *testing.T) {
	t.Parallel()
	for _, bc := range backends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			n := testutil.Scale(t, 10, 20)
			chain := []string{r.Commit}
			for i := 1; i <= n; i++ {
				chain = append(chain, r.Run("commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", fmt.Sprint(i)))
			}
			ref := "refs/heads/chain"
			setRefs(t, r, map[string]string{ref: chain[0]})
			var runs []*coalesceRun
			for j := 1; j <= n; j++ {
				runs = append(runs, &coalesceRun{args: []string{ref, chain[j], chain[j-1]}})
			}
			// Some unrelated refs, so that groups form.
			for i := range 2 * n {
				runs = append(runs, &coalesceRun{args: []string{fmt.Sprintf("refs/heads/o/%d", i), r.Commit}})
			}
			runAll(t, r, runs)
			k := 0
			for j := 1; j <= n; j++ {
				if runs[j-1].res.code == 0 {
					k = j
				}
			}
			for j := 1; j <= n; j++ {
				res := runs[j-1].res
				switch {
				case j <= k && res != (result{}):
					t.Errorf("update %d: %+v; want success (update %d succeeded)", j, res, k)
				case j > k:
					prefix := fmt.Sprintf("fatal: update_ref failed for ref '%s': cannot lock ref '%s': is at ", ref, ref)
					suffix := fmt.Sprintf(" but expected %s\n", chain[j-1])
					if res.code != 128 || !strings.HasPrefix(res.stderr, prefix) || !strings.HasSuffix(res.stderr, suffix) || res.stdout != "" {
						t.Errorf("update %d: %+v; want git's compare-and-swap failure", j, res)
					}
				}
			}
			t.Logf("updates 1..%d of %d succeeded", k, n)
			if got := r.Refs(ref)[ref]; got != chain[k] {
				t.Errorf("%s = %s, want %s (update %d)", ref, got, chain[k], k)
			}
			logs := strings.Split(r.Run("reflog", "show", "--format=%H", ref), "\n")
			var wantLogs []string
			for j := k; j >= 0; j-- {
				wantLogs = append(wantLogs, chain[j]) // chain[0]: set by setRefs
			}
			if strings.Join(logs, " ") != strings.Join(wantLogs, " ") {
				t.Errorf("reflog %v, want %v", logs, wantLogs)
			}
			for i := range 2 * n {
				if c := runs[n+i]; c.res != (result{}) {
					t.Errorf("%q: %+v", c.args, c.res)
				}
			}
		})
	}
}

// TestCoalescePatience: an invocation that finds the line taken queues for it; when
// its budget runs out while the line stays taken it withdraws and runs alone, the
// usual way: it succeeds, once, and is not handed the line afterwards. That it
// queued is seen at the rendezvous, and that it waited its budget first in its log:
// the summary's elapsed time, less its one attempt's (git's run alone), is at least
// the budget.
func TestCoalescePatience(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"reftable", "files"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, backend)
			release := holdLine(t, r)
			defer func() { release() }() // the release set last
			ref := "refs/heads/patient"
			const budget = 1500 * time.Millisecond
			logFile := filepath.Join(t.TempDir(), "log.jsonl")
			c := &coalesceRun{args: []string{"--log-file", logFile, "--timeout", budget.String(), ref, r.Commit, ""}}
			startCoalescing(t, r, []*coalesceRun{c})()
			// Nobody accepts at the rendezvous while the test holds the line: the
			// connection the invocation queued with is still in its queue.
			switch n := testutil.Queued(rendezvous(t, r)); {
			case n < 0:
				t.Skip("cannot count queued connections: no /proc/net/unix")
			case n != 1:
				t.Errorf("%d connections queued at the rendezvous, want the invocation's one: it joined no group", n)
			}
			if c.res != (result{}) {
				t.Errorf("%+v; want success", c.res)
			}
			if got := r.Refs(ref)[ref]; got != r.Commit {
				t.Errorf("%s = %q", ref, got)
			}
			if n := r.Run("reflog", "show", "--format=%H", ref); n != r.Commit {
				t.Errorf("reflog %q, want one entry", n)
			}
			b, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			recs := jsonLines(t, string(b))
			if len(recs) != 2 || recs[0]["msg"] != "attempt" || recs[1]["msg"] != "summary" {
				t.Fatalf("log records %v; want one attempt and the summary", recs)
			}
			attempt, summary := recs[0], recs[1]
			ran, _ := attempt["duration_ms"].(float64)
			elapsed, _ := summary["elapsed_ms"].(float64)
			if summary["result"] != "success" || summary["attempts"] != 1.0 {
				t.Errorf("summary %v; want a success at the first attempt", summary)
			}
			if waited := time.Duration((elapsed - ran) * float64(time.Millisecond)); waited < budget {
				t.Errorf("%v elapsed besides git's run (summary %v, attempt %v); want at least the budget, %v, spent waiting for the line",
					waited, summary, attempt, budget)
			}
			// Its connection, still queued, is no heir: handing the line over finds
			// nobody and frees it.
			release()
			release = func() {}
			l, err := testutil.ListenReleased(rendezvous(t, r))
			if err != nil {
				t.Fatalf("after the hand-over, the line is still taken: %v", err)
			}
			l.Close()
		})
	}
}

// TestCoalesceOff: with REFRETRY_COALESCE=0, and on the files backend by default,
// concurrent invocations each run their own git, as plain git would.
func TestCoalesceOff(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, tc := range []struct {
		backend string
		env     []string
	}{
		{"reftable", []string{"REFRETRY_COALESCE=0"}},
		{"files", nil},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, tc.backend)
			gits, _ := gitProcesses(t, r)
			var wait sync.WaitGroup
			var mu sync.Mutex
			var failed []string
			for i := range 20 {
				wait.Add(1)
				go func() {
					defer wait.Done()
					cmd := commandIn(r, binary, fmt.Sprintf("refs/heads/off/%d", i), r.Commit)
					cmd.Env = append(cmd.Env, tc.env...)
					if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
						mu.Lock()
						failed = append(failed, fmt.Sprintf("%v %q", err, out))
						mu.Unlock()
					}
				}()
			}
			wait.Wait()
			if len(failed) > 0 {
				t.Errorf("failures: %v", failed)
			}
			if n := gits(); len(n) != 20 {
				t.Errorf("%d gits committed the 20 updates: %v; want one each", len(n), n)
			}
		})
	}
}
