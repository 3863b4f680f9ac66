package gitserver_test

import (
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
// the first POST, between the advertisement and the update.
func newRaced(t *testing.T, cb combo, opts gitserver.Options, move func(r *raced)) *raced {
	t.Helper()
	r := &raced{rem: newRemote(t, cb.server, cb.backend)}
	setup := r.rem.serve(gitserver.Options{})
	r.w = newWork(t, cb.client, setup.URL("r.git"))
	r.a = r.w.commit("a")
	r.b = r.w.commit("b")
	r.w.run("push", "-q", "origin", r.a+":refs/heads/main", r.a+":refs/heads/del", r.a+":refs/heads/d", r.b+":refs/heads/other")
	r.w.run("reset", "-q", "--hard", r.a)
	r.c = r.w.commit("c")
	r.w.run("fetch", "-q", "origin")
	setup.Close()

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

func porcelain(url, ref, reason string) string {
	return "To " + url + "\n!\trefs/heads/main:" + ref + "\t[remote rejected] (" + reason + ")\nDone\n"
}

func failedTo(url string) string { return "error: failed to push some refs to '" + url + "'\n" }

// TestGitHubTranscribedLockFailures: through ForgeGitHub, each lost race prints
// GitHub's transcribed shape, `[remote rejected] (cannot lock ref '<ref>': <detail>)`,
// and no remote: line, whatever git's own reason for it was.
func TestGitHubTranscribedLockFailures(t *testing.T) {
	t.Parallel()
	for _, cb := range combos(t) {
		for _, lr := range lockRaces {
			t.Run(cb.name()+"/"+lr.name, func(t *testing.T) {
				t.Parallel()
				r, p := racePush(t, cb, gitserver.ForgeGitHub, lr)
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
	}
}

// TestGitLabTranscribedIncorrectOldValue: through ForgeGitLab, a lost compare-and-swap
// is `(incorrect old value provided)` with no remote: line, from every server git;
// the other lock failures print what git prints.
func TestGitLabTranscribedIncorrectOldValue(t *testing.T) {
	t.Parallel()
	for _, cb := range combos(t) {
		for _, lr := range lockRaces {
			t.Run(cb.name()+"/"+lr.name, func(t *testing.T) {
				t.Parallel()
				r, p := racePush(t, cb, gitserver.ForgeGitLab, lr)
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
	}
}

// TestGitOwnOutput: ForgeGit leaves git's answer alone: git's reason, and git's
// remote: error line.
func TestGitOwnOutput(t *testing.T) {
	t.Parallel()
	for _, cb := range combos(t) {
		for _, lr := range lockRaces {
			t.Run(cb.name()+"/"+lr.name, func(t *testing.T) {
				t.Parallel()
				r, p := racePush(t, cb, gitserver.ForgeGit, lr)
				url := r.srv.URL("r.git")
				if want := porcelain(url, lr.ref, lr.gitReason(cb)); p.stdout != want {
					t.Errorf("stdout:\n%s\nwant:\n%s", p.stdout, want)
				}
				if want := remoteLines(lr.gitLine(cb, r)) + failedTo(url); p.stderr != want {
					t.Errorf("stderr:\n%s\nwant:\n%s", p.stderr, want)
				}
			})
		}
	}
}
