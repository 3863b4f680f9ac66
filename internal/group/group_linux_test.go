//go:build linux

package group

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/platform"
	"github.com/refretry/refretry/internal/repo"
)

// These tests run members and leaders in this process, against real git, with the
// test itself standing in for a leader where a fault must happen at a chosen step.

func config(t *testing.T, r *testutil.Repo, args ...string) Config {
	t.Helper()
	u, o, ok := Parse(args)
	if !ok {
		t.Fatalf("Parse(%q) refused", args)
	}
	return Config{
		Git: r.Git.Path, Dirs: []string{r.Dir}, Env: r.Env,
		GitDir: r.GitDir, CommonDir: r.GitDir,
		Store:  repo.Store{Format: r.Backend, Dir: r.GitDir, WorktreeDir: r.GitDir},
		Update: u, Options: o,
	}
}

func name(t *testing.T, r *testutil.Repo) string {
	t.Helper()
	n, ok := Name(r.GitDir)
	if !ok {
		t.Fatal("no rendezvous name")
	}
	return n
}

// waitQueued waits until n connections wait at the rendezvous point.
func waitQueued(t *testing.T, rv string, n int) { t.Helper(); testutil.WaitQueued(t, rv, n) }

// hold takes the line, as a leader busy with something else would.
func hold(t *testing.T, r *testutil.Repo) *platform.Listener {
	t.Helper()
	l, err := platform.Listen(name(t, r))
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// joined is the outcome of one Join run in a goroutine.
type joined struct {
	out  Outcome
	done chan struct{}
}

func startJoin(ctx context.Context, c Config) *joined {
	j := &joined{done: make(chan struct{})}
	go func() {
		defer close(j.done)
		j.out = Join(ctx, c)
	}()
	return j
}

func (j *joined) wait(t *testing.T) Outcome {
	t.Helper()
	select {
	case <-j.done:
	case <-time.After(time.Minute):
		t.Fatal("Join did not return")
	}
	return j.out
}

// TestJoinAloneHoldsTheLine: with nobody else about, an invocation is told to run
// alone while holding the line, and releasing it frees the name.
func TestJoinAloneHoldsTheLine(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	out := Join(context.Background(), config(t, r, "refs/heads/x", r.Commit))
	if out.Applied || out.Lease == nil {
		t.Fatalf("Join = %+v, want to run alone holding the line", out)
	}
	if _, err := platform.Listen(name(t, r)); !errors.Is(err, platform.ErrBusy) {
		t.Fatalf("while the lease is held, Listen = %v; want ErrBusy", err)
	}
	out.Lease.Release()
	l, err := testutil.ListenReleased(name(t, r))
	if err != nil {
		t.Fatalf("after Release, Listen = %v", err)
	}
	l.Close()
}

// TestMemberWaitEndsWithContext: a member waiting for a leader that never answers,
// with a budget that never runs out, stops waiting when its context ends, and runs
// alone (no git was told of its update).
func TestMemberWaitEndsWithContext(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	l := hold(t, r)
	defer l.Close()
	c := config(t, r, "refs/heads/c", r.Commit)
	c.GiveUp = func(time.Duration) (bool, time.Duration) { return false, 0 }
	ctx, cancel := context.WithCancel(context.Background())
	j := startJoin(ctx, c)
	waitQueued(t, name(t, r), 1)
	cancel()
	if out := j.wait(t); out.Applied || out.Unknown || out.Lease != nil {
		t.Fatalf("Join = %+v after its context ended; want to run alone, without the line", out)
	}
}

// TestMemberAsksGiveUpWhenItSaid: a member asks GiveUp before it looks for the line,
// then, while it waits, not before the time GiveUp named, and stops when it says so.
func TestMemberAsksGiveUpWhenItSaid(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	l := hold(t, r)
	defer l.Close()
	c := config(t, r, "refs/heads/g", r.Commit)
	const again = 300 * time.Millisecond
	var asked []time.Duration // appended by Join's goroutine, read after it returned
	c.GiveUp = func(waited time.Duration) (bool, time.Duration) {
		asked = append(asked, waited)
		return len(asked) == 2, again
	}
	out := startJoin(context.Background(), c).wait(t)
	if out.Applied || out.Unknown || out.Lease != nil {
		t.Errorf("Join = %+v; want to run alone, without the line", out)
	}
	if len(asked) != 2 || asked[1] < asked[0]+again {
		t.Errorf("GiveUp asked at %v; want twice, %v apart or more", asked, again)
	}
}

// TestGroupCommits: invocations queued behind a held line are committed by one git
// when the line is handed over, on both backends; with a reference-transaction hook
// (and on the files backend) each update is a transaction of its own, so the hook
// sees one update at a time, as it would from separate gits.
func TestGroupCommits(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, tc := range []struct {
		backend   string
		hook      bool
		wantBatch bool
	}{
		{"reftable", false, true},
		{"reftable", true, false},
		{"files", false, false},
		{"files", true, false},
	} {
		t.Run(fmt.Sprintf("%s/hook=%v", tc.backend, tc.hook), func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, tc.backend)
			hookLog := filepath.Join(t.TempDir(), "hook.log")
			if tc.hook {
				hook := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = committed ]; then wc -l >>'%s'; fi\n", hookLog)
				if err := os.WriteFile(filepath.Join(r.GitDir, "hooks", "reference-transaction"), []byte(hook), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			l := hold(t, r)
			const n = 8
			var js []*joined
			for i := range n {
				c := config(t, r, fmt.Sprintf("refs/heads/g/%d", i), r.Commit)
				c.Default = true
				js = append(js, startJoin(context.Background(), c))
			}
			waitQueued(t, name(t, r), n)
			HandOver(l)
			for i, j := range js {
				if out := j.wait(t); !out.Applied || out.Lease != nil || len(out.Stderr) != 0 {
					t.Errorf("invocation %d: %+v; want applied, nothing on stderr", i, out)
				}
			}
			refs := r.Refs("refs/heads/g/")
			if len(refs) != n {
				t.Errorf("%d refs written, want %d: %v", len(refs), n, refs)
			}
			for ref, oid := range refs {
				if oid != r.Commit {
					t.Errorf("%s = %s", ref, oid)
				}
			}
			if tc.hook {
				log, err := os.ReadFile(hookLog)
				if err != nil {
					t.Fatal(err)
				}
				if got := strings.Fields(string(log)); len(got) != n || strings.Join(got, "") != strings.Repeat("1", n) {
					t.Errorf("the hook saw %q; want %d transactions of one update", got, n)
				}
			}
		})
	}
}

// TestGroupFailureInTheMiddle: of three queued updates the second fails (its old
// value is wrong). The first and third are applied; the second is told to run alone
// (so that its own git reports the failure), holding the line, and is not applied.
func TestGroupFailureInTheMiddle(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"reftable", "files"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, backend)
			other := r.NewCommit("second")
			l := hold(t, r)
			rv := name(t, r)
			args := [][]string{
				{"refs/heads/m/1", r.Commit},
				{"refs/heads/m/2", r.Commit, other}, // expects other; the ref does not exist
				{"refs/heads/m/3", r.Commit},
			}
			var js []*joined
			for i, a := range args {
				js = append(js, startJoin(context.Background(), config(t, r, a...)))
				waitQueued(t, rv, i+1) // in this order in the queue
			}
			HandOver(l)
			outs := []Outcome{js[0].wait(t), js[1].wait(t), js[2].wait(t)}
			if !outs[0].Applied || !outs[2].Applied {
				t.Errorf("first and third: %+v, %+v; want applied", outs[0], outs[2])
			}
			// It runs alone holding the line, so that its own git meets no group's.
			if outs[1].Applied || outs[1].Lease == nil {
				t.Errorf("second: %+v; want to run alone holding the line", outs[1])
			}
			outs[1].Lease.Release()
			refs := r.Refs("refs/heads/m/")
			if refs["refs/heads/m/1"] != r.Commit || refs["refs/heads/m/3"] != r.Commit {
				t.Errorf("refs %v", refs)
			}
			if _, ok := refs["refs/heads/m/2"]; ok {
				t.Errorf("the failing update was applied: %v", refs)
			}
		})
	}
}

// TestGroupOptionsDiffer: invocations with other options (another reflog message)
// are committed by a git of their own, in the same turn; each ref's reflog carries
// its own invocation's message.
func TestGroupOptionsDiffer(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	l := hold(t, r)
	rv := name(t, r)
	var js []*joined
	for i, msg := range []string{"one", "two", "one"} {
		js = append(js, startJoin(context.Background(), config(t, r, "-m", msg, fmt.Sprintf("refs/heads/k/%d", i), r.Commit)))
		waitQueued(t, rv, i+1)
	}
	HandOver(l)
	for i, j := range js {
		if out := j.wait(t); !out.Applied {
			t.Errorf("invocation %d: %+v; want applied", i, out)
		}
	}
	for i, msg := range []string{"one", "two", "one"} {
		ref := fmt.Sprintf("refs/heads/k/%d", i)
		if got := r.Run("reflog", "show", "--format=%gs", ref); got != msg {
			t.Errorf("%s: reflog %q, want %q", ref, got, msg)
		}
	}
}

// TestGroupEnvironmentDiffers: an invocation whose environment differs where git
// reads it (another committer) cannot share the leader's git: it is told to run
// alone, and gets the line for that after the leader's group.
func TestGroupEnvironmentDiffers(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	l := hold(t, r)
	rv := name(t, r)
	a := startJoin(context.Background(), config(t, r, "refs/heads/e/1", r.Commit))
	waitQueued(t, rv, 1)
	b := startJoin(context.Background(), config(t, r, "refs/heads/e/2", r.Commit))
	waitQueued(t, rv, 2)
	cc := config(t, r, "refs/heads/e/3", r.Commit)
	cc.Env = append(cc.Env, "GIT_COMMITTER_NAME=Someone Else")
	c := startJoin(context.Background(), cc)
	waitQueued(t, rv, 3)
	HandOver(l)
	if out := a.wait(t); !out.Applied {
		t.Errorf("leader: %+v; want applied", out)
	}
	if out := b.wait(t); !out.Applied {
		t.Errorf("same environment: %+v; want applied", out)
	}
	out := c.wait(t)
	if out.Applied || out.Lease == nil {
		t.Fatalf("other environment: %+v; want to run alone holding the line", out)
	}
	if _, ok := r.Refs("refs/heads/e/3")["refs/heads/e/3"]; ok {
		t.Error("the other environment's update was applied by the leader's git")
	}
	out.Lease.Release()
}

// queueForbidden queues three default invocations (refs prefix0..2) behind a held
// line, each saying, when asked, that configuration forbids grouping; asked counts
// the questions.
func queueForbidden(t *testing.T, r *testutil.Repo, prefix string) (js []*joined, asked func() int) {
	t.Helper()
	rv := name(t, r)
	var mu sync.Mutex
	n := 0
	for i := range 3 {
		c := config(t, r, fmt.Sprintf("%s%d", prefix, i), r.Commit)
		c.Default = true
		c.Allowed = func() bool { mu.Lock(); n++; mu.Unlock(); return false }
		js = append(js, startJoin(context.Background(), c))
		waitQueued(t, rv, i+1)
	}
	return js, func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// TestGroupDefaultRespectsConfiguration: by default, a leader asks whether grouping is
// allowed; when not, every member runs alone.
func TestGroupDefaultRespectsConfiguration(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	l := hold(t, r)
	js, asked := queueForbidden(t, r, "refs/heads/d/")
	HandOver(l)
	for i, j := range js {
		out := j.wait(t)
		if out.Applied {
			t.Errorf("invocation %d applied by a group that configuration forbids", i)
		}
		if out.Lease != nil {
			out.Lease.Release()
		}
	}
	if asked() == 0 {
		t.Error("nobody asked whether grouping is allowed")
	}
	if refs := r.Refs("refs/heads/d/"); len(refs) != 0 {
		t.Errorf("refs %v written by a group", refs)
	}
}

// fakeLeader accepts one member and starts a real git for its update the way a
// leader does, with the member told, so that the test can then fail at a chosen step.
type fakeLeader struct {
	t      *testing.T
	l      *platform.Listener
	conn   *platform.Conn
	stdout *os.File
	stderr *os.File
	proc   *os.File
	ends   *os.File
	git    *gitexec.Process
	stdin  *os.File
	req    request
}

func acceptMember(t *testing.T, r *testutil.Repo, l *platform.Listener) *fakeLeader {
	t.Helper()
	f := &fakeLeader{t: t, l: l}
	deadline := time.Now().Add(30 * time.Second)
	for f.conn == nil {
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			if time.Now().After(deadline) {
				t.Fatal("no member came")
			}
			time.Sleep(time.Millisecond)
			continue
		}
		f.conn = c
	}
	buf := make([]byte, maxMessage)
	n, _, err := f.conn.Recv(buf, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	req, ok := decodeRequest(buf[:n])
	if !ok {
		t.Fatalf("bad request %q", buf[:n])
	}
	f.req = req
	return f
}

// start starts git for the member's update and tells the member (place 0).
func (f *fakeLeader) start(r *testutil.Repo) {
	t := f.t
	t.Helper()
	var err error
	if f.stdout, err = platform.MemFile("out"); err != nil {
		t.Fatal(err)
	}
	if f.stderr, err = platform.MemFile("err"); err != nil {
		t.Fatal(err)
	}
	if f.ends, err = platform.MemFile("ends"); err != nil {
		t.Fatal(err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	f.stdin = inW
	f.git, err = gitexec.Start(context.Background(), gitexec.Spec{
		Git: r.Git.Path, Dirs: []string{r.Dir}, Env: r.Env, Args: []string{"update-ref", "--stdin", "-z"},
		Stdin: inR, Stdout: f.stdout, Stderr: f.stderr,
	})
	inR.Close()
	if err != nil {
		t.Fatal(err)
	}
	if f.proc, err = platform.ProcessHandle(f.git.Pid()); err != nil {
		t.Fatal(err)
	}
	if err := f.conn.Send([]byte("G0 0"), int(f.stdout.Fd()), int(f.stderr.Fd()), int(f.proc.Fd()), int(f.ends.Fd())); err != nil {
		t.Fatal(err)
	}
}

// input gives git the member's update, committed or not, and waits for git.
func (f *fakeLeader) input(commit bool) {
	t := f.t
	t.Helper()
	in := "start\x00" + f.req.cmd
	if commit {
		in += "commit\x00"
	}
	if _, err := f.stdin.WriteString(in); err != nil {
		t.Fatal(err)
	}
	f.stdin.Close()
	if _, err := f.git.Wait(); err != nil {
		t.Fatal(err)
	}
}

// die ends the fake leader as a killed process would end: every descriptor closed,
// nothing more said.
func (f *fakeLeader) die() {
	if f.conn != nil {
		f.conn.Close()
	}
	f.l.Close()
	for _, file := range []*os.File{f.stdout, f.stderr, f.proc, f.ends, f.stdin} {
		if file != nil {
			file.Close()
		}
	}
}

// TestMemberSettlesAfterLeaderDies: a leader dies after its git got the input, but
// before telling the member. The member reads the outcome from git's own stdout: it
// was applied if git committed, and otherwise the member looks for a leader again.
func TestMemberSettlesAfterLeaderDies(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprintf("commit=%v", commit), func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, "reftable")
			l := hold(t, r)
			j := startJoin(context.Background(), config(t, r, "refs/heads/d", r.Commit))
			f := acceptMember(t, r, l)
			f.start(r)
			f.input(commit)
			f.die()
			out := j.wait(t)
			_, written := r.Refs("refs/heads/d")["refs/heads/d"]
			switch {
			case written != commit:
				t.Fatalf("git applied it: %v, want %v", written, commit)
			case commit && (!out.Applied || out.Lease != nil):
				t.Errorf("%+v; want applied (git committed it)", out)
			case !commit && (out.Applied || out.Lease == nil):
				// Nobody left to lead: it found the line free and holds it.
				t.Errorf("%+v; want to run alone, holding the line", out)
			}
			if out.Lease != nil {
				out.Lease.Release()
			}
		})
	}
}

// TestMemberStderrEnds: a member that settles without the leader's word takes git's
// stderr only up to where the leader recorded its transaction's end, never what later
// transactions of the same git printed (with a reference-transaction hook, each
// update is its own transaction; another member's failure comes after).
func TestMemberStderrEnds(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	l := hold(t, r)
	j := startJoin(context.Background(), config(t, r, "refs/heads/d", r.Commit))
	f := acceptMember(t, r, l)
	f.start(r)
	f.input(true)
	fi, err := f.stderr.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ends.Write(binary.LittleEndian.AppendUint64(nil, uint64(fi.Size()))); err != nil {
		t.Fatal(err)
	}
	later := "fatal: commit: cannot lock ref 'refs/heads/other': is at 1 but expected 2\n"
	if _, err := f.stderr.WriteAt([]byte(later), fi.Size()); err != nil {
		t.Fatal(err)
	}
	f.die()
	out := j.wait(t)
	if !out.Applied || strings.Contains(string(out.Stderr), "refs/heads/other") {
		t.Errorf("%+v (stderr %q); want applied, without the later transaction's stderr", out, out.Stderr)
	}
}

// TestGroupAsksAgainBesideItsCommit: a leader whose predecessor's answer (may a default
// group form?) is older than revet commits its group on that answer and asks again
// beside its own git, for the groups after it, instead of asking first: on a loaded
// machine that put two more gits on every group's path.
func TestGroupAsksAgainBesideItsCommit(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	l := hold(t, r)
	js, asked := queueForbidden(t, r, "refs/heads/v/")
	handOff(l, baton{vetted: time.Now().Add(-2 * revet), allowed: true}, os.Getuid())
	applied := 0
	for _, j := range js {
		out := j.wait(t)
		if out.Applied {
			applied++
		}
		if out.Lease != nil {
			out.Lease.Release()
		}
	}
	if n := asked(); applied != 3 || n != 1 {
		t.Errorf("%d of 3 applied by the group, configuration asked %d times; want all 3 on the predecessor's answer, asked once beside the commit", applied, n)
	}
	if refs := r.Refs("refs/heads/v/"); len(refs) != 3 {
		t.Errorf("refs written: %v; want 3", refs)
	}
}
