package main

import (
	"bytes"
	"encoding/json"
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

	"github.com/refretry/refretry/internal/testutil"
)

// Tests of --coalesce (transaction/group*.go, docs/coalescing.md) against real git,
// with the built binary.

// coalesceRun is one refretry invocation in a coalescing test.
type coalesceRun struct {
	args []string
	res  result
	cmd  *exec.Cmd
}

// lineDir is the directory coalescing invocations queue on: reftable's, or the
// store's on the files backend.
func lineDir(r *testutil.Repo) string {
	if r.Backend == "reftable" {
		return filepath.Join(r.GitDir, "reftable")
	}
	return filepath.Join(r.GitDir, "refretry")
}

// holdLine takes the line, so that invocations started now all queue and form
// groups when it is released.
func holdLine(t *testing.T, r *testutil.Repo) (release func()) {
	t.Helper()
	dir := lineDir(r)
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// waitPending waits until n updates are pending in the store.
func waitPending(t *testing.T, r *testutil.Repo, n int) {
	t.Helper()
	dir := filepath.Join(r.GitDir, "refretry", "pending")
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ents, _ := os.ReadDir(dir)
		if len(ents) >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d updates pending", len(ents), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startCoalescing starts refretry with REFRETRY_COALESCE=1 for each run; wait waits
// for all of them and records their results.
func startCoalescing(t *testing.T, r *testutil.Repo, runs []*coalesceRun) (wait func()) {
	t.Helper()
	var done sync.WaitGroup
	for _, c := range runs {
		c.cmd = commandIn(r, binary, c.args...)
		c.cmd.Env = append(c.cmd.Env, "REFRETRY_COALESCE=1")
		var out, errOut bytes.Buffer
		c.cmd.Stdout, c.cmd.Stderr = &out, &errOut
		if err := c.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done.Add(1)
		go func() {
			defer done.Done()
			err := c.cmd.Wait()
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

// runAll starts the runs with the line held until every one of them is pending, then
// lets them go and waits for all.
func runAll(t *testing.T, r *testutil.Repo, runs []*coalesceRun) {
	t.Helper()
	release := holdLine(t, r)
	wait := startCoalescing(t, r, runs)
	waitPending(t, r, len(runs))
	release()
	wait()
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

func coalesceBackends(t *testing.T) []backendCase {
	old, cur := testutil.SystemGit(t), testutil.NewGit(t)
	return []backendCase{{cur, "reftable"}, {cur, "files"}, {old, "files"}}
}

// TestCoalesceMixed: 600 concurrent invocations (creates, updates, compare-and-swap
// updates, deletes, with two reflog messages), a known subset of which fail on stale
// old values. Exactly those fail, each with the bytes and exit code plain git gives
// for its own command; all others succeed silently; every ref ends as it should, its
// reflog has one entry per applied update, with its invocation's message; and groups
// really formed (the reference-transaction hook saw more than one update at once).
func TestCoalesceMixed(t *testing.T) {
	t.Parallel()
	for _, bc := range coalesceBackends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			r := testutil.NewRepo(t, bc.git, bc.backend)
			a, b := r.Commit, r.NewCommit("second")
			const per = 60
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
			if len(runs) != 600 {
				t.Fatalf("%d runs", len(runs))
			}
			setRefs(t, r, pre)
			hookLog := filepath.Join(t.TempDir(), "hook.log")
			hook := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = committed ]; then wc -l >>'%s'; fi\n", hookLog)
			hookPath := filepath.Join(r.GitDir, "hooks", "reference-transaction")
			if err := os.WriteFile(hookPath, []byte(hook), 0o755); err != nil {
				t.Fatal(err)
			}
			rand.Shuffle(len(runs), func(i, j int) { runs[i], runs[j] = runs[j], runs[i] })
			runAll(t, r, runs)
			log, err := os.ReadFile(hookLog)
			if err != nil {
				t.Fatal(err)
			}
			os.Remove(hookPath)

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
			grouped := false
			for _, line := range strings.Fields(string(log)) {
				if line != "1" && line != "0" {
					grouped = true
				}
			}
			if !grouped {
				t.Errorf("no transaction had more than one update: %q", log)
			}
		})
	}
}

// TestCoalesceLeaderKilled kills the leader of a group with SIGKILL at a random point
// of its work, 20 times: nothing is lost or applied twice, and every invocation that
// survived reports what the repository shows.
func TestCoalesceLeaderKilled(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for run := range 20 {
		backend := []string{"reftable", "files"}[run%2]
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
			waitPending(t, r, n)
			killed := make(chan int, 1)
			go func() { killed <- killLeader(r, time.Duration(rand.IntN(12000))*time.Microsecond) }()
			release()
			victim := <-killed
			wait()
			got := r.Refs("refs/heads/k/")
			for i, c := range runs {
				after := r.Commit
				if i%3 == 0 {
					after = other
				}
				applied := got[refs[i]] == after
				// One reflog entry per applied update, after the one of setRefs.
				entries := 0
				if _, exists := got[refs[i]]; exists {
					entries = len(strings.Split(r.Run("reflog", "show", "--format=%H", refs[i]), "\n"))
				}
				if i%3 == 0 {
					entries--
				}
				if applied && entries != 1 || !applied && entries != 0 {
					t.Errorf("%s: applied %v with %d reflog entries", refs[i], applied, entries)
				}
				if c.cmd.Process.Pid == victim {
					t.Logf("killed leader %d (exit %d): its update %s applied", victim, c.res.code, map[bool]string{true: "was", false: "was not"}[applied])
					continue // its outcome is unknown, as with a killed git
				}
				switch {
				case c.res.code == 0 && !applied:
					t.Errorf("%s: reported success, not applied (%+v)", refs[i], c.res)
				case c.res.code != 0:
					t.Errorf("%s: %+v; want success", refs[i], c.res)
				}
			}
			if victim == 0 {
				t.Log("no group leader was seen to kill")
			}
		})
	}
}

// killLeader waits for a group record, then kills its leader after delay.
func killLeader(r *testutil.Repo, delay time.Duration) int {
	dir := filepath.Join(r.GitDir, "refretry", "groups")
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".") {
				continue
			}
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			var rec struct {
				Leader struct {
					PID int `json:"pid"`
				} `json:"leader"`
			}
			if json.Unmarshal(b, &rec) != nil || rec.Leader.PID == 0 {
				continue
			}
			time.Sleep(delay)
			syscall.Kill(rec.Leader.PID, syscall.SIGKILL)
			return rec.Leader.PID
		}
		time.Sleep(100 * time.Microsecond)
	}
	return 0
}

// TestCoalesceSameRef: compare-and-swap updates of one ref from many processes are
// applied in some serial order, each CAS honoured: the ones that succeed form the
// chain c1, c2, …, ck in the reflog, and every other one fails with git's message
// naming the value it expected.
func TestCoalesceSameRef(t *testing.T) {
	t.Parallel()
	for _, bc := range coalesceBackends(t) {
		t.Run(bc.git.Name()+"/"+bc.backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, bc.git, bc.backend)
			const n = 20
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

// TestCoalescePatience: an invocation whose budget runs out while the line stays
// occupied withdraws its update and runs alone, the usual way: it succeeds, once, and
// leaves nothing pending.
func TestCoalescePatience(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"reftable", "files"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, backend)
			release := holdLine(t, r)
			defer release()
			ref := "refs/heads/patient"
			c := &coalesceRun{args: []string{"--timeout", "1500ms", ref, r.Commit, ""}}
			startCoalescing(t, r, []*coalesceRun{c})()
			if c.res != (result{}) {
				t.Errorf("%+v; want success", c.res)
			}
			if got := r.Refs(ref)[ref]; got != r.Commit {
				t.Errorf("%s = %q", ref, got)
			}
			if n := r.Run("reflog", "show", "--format=%H", ref); n != r.Commit {
				t.Errorf("reflog %q, want one entry", n)
			}
			if ents, _ := os.ReadDir(filepath.Join(r.GitDir, "refretry", "pending")); len(ents) != 0 {
				t.Errorf("left pending: %v", ents)
			}
		})
	}
}
