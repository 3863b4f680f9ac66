package gitserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// combo is a client git pushing to a server git with its ref backend.
type combo struct {
	client, server testutil.Git
	backend        string
}

func (c combo) name() string {
	return "client-" + c.client.Name() + "/server-" + c.server.Name() + "-" + c.backend
}

// combos: git 2.55 pushing to each server (2.39 and 2.55 files, 2.55 reftable), whose
// receive-pack words the failures differently, and git 2.39 pushing to 2.55.
func combos(t *testing.T) []combo {
	old, cur := testutil.SystemGit(t), testutil.NewGit(t)
	return []combo{{cur, old, "files"}, {cur, cur, "files"}, {cur, cur, "reftable"}, {old, cur, "files"}}
}

// coveringCombos is combos at the stress size; at the default size the three that
// hold each client (2.55, 2.39), each server (2.39, 2.55) and each backend once:
// 2.55 to 2.39 files, 2.55 to 2.55 reftable, 2.39 to 2.55 files.
func coveringCombos(t *testing.T) []combo { return testutil.Cells(t, combos(t), 0, 2, 3) }

// cell is case i of a matrix test against one combo.
type cell struct {
	cb combo
	i  int
}

// cells is every combo of cbs with each of n cases at the stress size. At the default
// size it is max(n, len(cbs)) of them, the j-th pairing case j%n with combo
// (j+shift)%len(cbs): every case and every combo (so each client, server and
// backend of cbs) appears, each case once where there are at least as many cases.
func cells(t *testing.T, cbs []combo, n, shift int) []cell {
	all := make([]cell, 0, len(cbs)*n)
	for _, cb := range cbs {
		for i := range n {
			all = append(all, cell{cb, i})
		}
	}
	small := make([]int, 0, max(n, len(cbs)))
	for j := range max(n, len(cbs)) {
		small = append(small, (j+shift)%len(cbs)*n+j%n)
	}
	return testutil.Cells(t, all, small...)
}

// raceShift pairs the lock races with combos at the default size so that the
// directory/file conflict (lockRaces[3]), which a reftable server words without
// "cannot lock ref", meets the reftable server (combos(t)[2]); the concurrent creation
// meets the 2.39 server, whose porcelain reason is 2.39's.
const raceShift = 3

// remoteLines is what the client prints for the server's messages: "remote: ", the
// text and the side band's padding, or "remote: " alone for an empty line.
func remoteLines(lines ...string) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString("remote: " + l)
		if l != "" {
			b.WriteString("        ")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// raced is a remote with main, del and d at A, other at B, and a client whose main
// is C (a child of A). The setup pushes through a server of its own, so the server
// under test numbers the test's pushes from 1.
type raced struct {
	rem     *remote
	srv     *gitserver.Server
	w       *work
	a, b, c string
}

// newRaced serves the remote with opts; move, when set, runs in BeforeReceivePack of
// the first POST, between the advertisement and the update. The two repositories are
// a copy of the combo's start, built once per test binary (startRaced).
func newRaced(t *testing.T, cb combo, opts gitserver.Options, move func(r *raced)) *raced {
	t.Helper()
	root, _, oids := starts.Copy(t, cb.name(), func(t testing.TB, dir string) [3]string { return startRaced(t, cb, dir) })
	r := &raced{rem: remoteAt(t, cb.server, cb.backend, filepath.Join(root, "remote")),
		w: workAt(t, cb.client, filepath.Join(root, "work")), a: oids[0], b: oids[1], c: oids[2]}

	before := opts.BeforeReceivePack
	opts.BeforeReceivePack = func(n int) {
		if before != nil {
			before(n)
		}
		if n == 1 && move != nil {
			move(r)
		}
	}
	r.srv = r.rem.serve(opts)
	r.w.run("remote", "set-url", "origin", r.srv.URL("r.git"))
	return r
}

// starts holds each combo's two repositories as newRaced hands them out.
var starts testutil.Starts[[3]string]

// startRaced builds a combo's start under dir: the remote's root in remote/, the
// client's in work/, the client's origin a server since closed. It returns A, B and C.
func startRaced(t testing.TB, cb combo, dir string) [3]string {
	t.Helper()
	for _, sub := range []string{"remote", "work"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rem := initRemote(t, cb.server, cb.backend, filepath.Join(dir, "remote"))
	setup := rem.serve(gitserver.Options{})
	defer setup.Close()
	w := initWork(t, cb.client, filepath.Join(dir, "work"), setup.URL("r.git"))
	a := w.commit("a")
	b := w.commit("b")
	w.run("push", "-q", "origin", a+":refs/heads/main", a+":refs/heads/del", a+":refs/heads/d", b+":refs/heads/other")
	w.run("reset", "-q", "--hard", a)
	c := w.commit("c")
	w.run("fetch", "-q", "origin")
	return [3]string{a, b, c}
}

// lockRace is one way a ref's update loses to another writer on the server.
type lockRace struct {
	name string
	ref  string // the ref main is pushed to
	move func(r *raced)
	// detail is git's message after "cannot lock ref '<ref>': ".
	detail func(r *raced) string
	// reason is git's porcelain reason: 2.39's, then 2.51+'s.
	reason39, reason55 string
}

var lockRaces = []lockRace{
	{"lost compare-and-swap", "refs/heads/main",
		func(r *raced) { r.rem.run("update-ref", "refs/heads/main", r.b) },
		func(r *raced) string { return "is at " + r.b + " but expected " + r.a },
		"failed to update ref", "incorrect old value provided"},
	{"concurrent creation", "refs/heads/new",
		func(r *raced) { r.rem.run("update-ref", "refs/heads/new", r.b) },
		func(*raced) string { return "reference already exists" },
		"failed to update ref", "reference already exists"},
	{"concurrent deletion", "refs/heads/del",
		func(r *raced) { r.rem.run("update-ref", "-d", "refs/heads/del") },
		func(*raced) string { return "unable to resolve reference 'refs/heads/del'" },
		"failed to update ref", "reference does not exist"},
	{"directory/file conflict", "refs/heads/d/x", nil,
		func(*raced) string { return "'refs/heads/d' exists; cannot create 'refs/heads/d/x'" },
		"failed to update ref", "refname conflict"},
}

// gitLine is the message git's receive-pack sends for the race: a reftable server
// reports a directory/file conflict without "cannot lock ref".
func (lr lockRace) gitLine(cb combo, r *raced) string {
	if lr.name == "directory/file conflict" && cb.backend == "reftable" {
		return "error: " + lr.detail(r)
	}
	return "error: cannot lock ref '" + lr.ref + "': " + lr.detail(r)
}

func (lr lockRace) gitReason(cb combo) string {
	if cb.server.AtLeast(2, 51) {
		return lr.reason55
	}
	return lr.reason39
}

// racePush pushes C to lr.ref (lr.move racing it) through a server in forge mode, and
// checks the exit code and that the server's ref did not take C.
func racePush(t *testing.T, cb combo, forge gitserver.Forge, lr lockRace) (*raced, pushed) {
	t.Helper()
	r := newRaced(t, cb, gitserver.Options{Forge: forge}, lr.move)
	p := r.w.push("--porcelain", "origin", "main:"+lr.ref)
	if p.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", p.code, p.stdout, p.stderr)
	}
	if r.rem.ref(lr.ref) == r.c {
		t.Errorf("server's %s took the refused push", lr.ref)
	}
	return r, p
}

// eachRace pushes each lock race through a server in forge mode, on the combos that
// cells pairs it with (raceShift), and hands check what the push printed.
func eachRace(t *testing.T, forge gitserver.Forge, check func(t *testing.T, cb combo, lr lockRace, r *raced, p pushed)) {
	for _, c := range cells(t, combos(t), len(lockRaces), raceShift) {
		cb, lr := c.cb, lockRaces[c.i]
		t.Run(cb.name()+"/"+lr.name, func(t *testing.T) {
			t.Parallel()
			r, p := racePush(t, cb, forge, lr)
			check(t, cb, lr, r, p)
		})
	}
}

func porcelain(url, ref, reason string) string {
	return "To " + url + "\n!\trefs/heads/main:" + ref + "\t[remote rejected] (" + reason + ")\nDone\n"
}

func failedTo(url string) string { return "error: failed to push some refs to '" + url + "'\n" }

// TestGitHubTranscribedLockFailures: through ForgeGitHub, each lost race prints
// GitHub's transcribed shape, `[remote rejected] (cannot lock ref '<ref>': <detail>)`,
// and no remote: line, whatever git's own reason for it was.
func TestGitHubTranscribedLockFailures(t *testing.T) {
	t.Parallel()
	eachRace(t, gitserver.ForgeGitHub, func(t *testing.T, cb combo, lr lockRace, r *raced, p pushed) {
		url := r.srv.URL("r.git")
		want := porcelain(url, lr.ref, "cannot lock ref '"+lr.ref+"': "+lr.detail(r))
		if p.stdout != want {
			t.Errorf("stdout:\n%s\nwant:\n%s", p.stdout, want)
		}
		if p.stderr != failedTo(url) {
			t.Errorf("stderr:\n%s\nwant:\n%s", p.stderr, failedTo(url))
		}
	})
}

// TestGitLabTranscribedIncorrectOldValue: through ForgeGitLab, a lost compare-and-swap
// is `(incorrect old value provided)` with no remote: line, from every server git;
// the other lock failures print what git prints.
func TestGitLabTranscribedIncorrectOldValue(t *testing.T) {
	t.Parallel()
	eachRace(t, gitserver.ForgeGitLab, func(t *testing.T, cb combo, lr lockRace, r *raced, p pushed) {
		url := r.srv.URL("r.git")
		wantOut, wantErr := porcelain(url, lr.ref, lr.gitReason(cb)), remoteLines(lr.gitLine(cb, r))+failedTo(url)
		if lr.name == "lost compare-and-swap" {
			wantOut, wantErr = porcelain(url, lr.ref, "incorrect old value provided"), failedTo(url)
		}
		if p.stdout != wantOut {
			t.Errorf("stdout:\n%s\nwant:\n%s", p.stdout, wantOut)
		}
		if p.stderr != wantErr {
			t.Errorf("stderr:\n%s\nwant:\n%s", p.stderr, wantErr)
		}
	})
}

// TestGitOwnOutput: ForgeGit leaves git's answer alone: git's reason, and git's
// remote: error line.
func TestGitOwnOutput(t *testing.T) {
	t.Parallel()
	eachRace(t, gitserver.ForgeGit, func(t *testing.T, cb combo, lr lockRace, r *raced, p pushed) {
		url := r.srv.URL("r.git")
		if want := porcelain(url, lr.ref, lr.gitReason(cb)); p.stdout != want {
			t.Errorf("stdout:\n%s\nwant:\n%s", p.stdout, want)
		}
		if want := remoteLines(lr.gitLine(cb, r)) + failedTo(url); p.stderr != want {
			t.Errorf("stderr:\n%s\nwant:\n%s", p.stderr, want)
		}
	})
}
