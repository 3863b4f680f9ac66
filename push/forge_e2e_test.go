package push_test

import (
	"errors"
	"github.com/refretry/refretry/failure"
	"slices"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/push"
)

// advance moves the server's ref to a new commit on top of it (same tree, message
// "another job's <what>"), as another job's push does, and returns the new value.
func (s *server) advance(ref, what string) string {
	s.t.Helper()
	old := s.ref(ref)
	commit := s.run(s.dir, "commit-tree", old+"^{tree}", "-p", old, "-m", "another job's "+what)
	s.run(s.dir, "update-ref", ref, commit, old)
	return commit
}

// TestForgeLostRace: the branch moves between the advertisement and the update, and the
// front end reports it as GitHub (the reason "cannot lock ref …: is at X but expected
// Y", no remote: line) or GitLab ("incorrect old value provided", no remote: line)
// does; for GitHub also after its notice to an actor who may bypass the branch's rules
// (akuity/kargo#3071), which does not hide the race. With --rebase the job lands on the
// second attempt; without, it fails after one attempt as git does, class behind. Each
// front end with and without --rebase at stress size; by default github with --rebase,
// github-bypass and gitlab without (testutil.Cells): the checks that only a push
// without --rebase makes (no remote: error line) then meet both forges' formats.
func TestForgeLostRace(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	seed := newHTTPSeed(t, combo{cur, cur, "files"})
	type front struct {
		name   string
		forge  gitserver.Forge
		bypass []gitserver.Bypass
	}
	type cell struct {
		front  front
		rebase bool
	}
	var cells []cell
	for _, f := range []front{
		{"github", gitserver.ForgeGitHub, nil},
		{"github-bypass", gitserver.ForgeGitHub, []gitserver.Bypass{gitserver.GitHubBypass("refs/heads/main")}},
		{"gitlab", gitserver.ForgeGitLab, nil},
	} {
		for _, rebase := range []bool{true, false} {
			cells = append(cells, cell{f, rebase})
		}
	}
	for _, cl := range testutil.Cells(t, cells, 0, 3, 5) {
		front, rebase := cl.front, cl.rebase
		forge := front.forge
		t.Run(front.name+map[bool]string{true: "/rebase", false: "/plain"}[rebase], func(t *testing.T) {
			t.Parallel()
			s := seed.server(t)
			var theirs string
			c, srv := seed.client(t, s, gitserver.Options{Forge: forge, Bypass: front.bypass,
				BeforeReceivePack: func(n int) {
					if n == 1 {
						theirs = s.advance("refs/heads/main", "theirs")
					}
				}})
			c.commit("mine", "mine\n")
			r := c.push(smallPolicy(5), func(p *push.Runner) { p.Rebase = rebase }, "origin", "main")
			var f *failure.Error
			if len(r.attempts) == 0 || !errors.As(r.attempts[0].Err, &f) || f.Moved == nil || f.Moved.Ref != "refs/heads/main" {
				t.Fatalf("first attempt %v, want the server's compare-and-swap failure on main\n%s", r.classes(), r.stderr)
			}
			if forge == gitserver.ForgeGitHub && f.Moved.Actual != theirs {
				t.Errorf("Moved %+v, want actual %s", f.Moved, theirs)
			}
			if strings.Contains(r.stderr, "remote: error:") && !rebase {
				t.Errorf("the front end sent a remote: error line:\n%s", r.stderr)
			}
			if notice := strings.Contains(r.stderr, "remote: Bypassed rule violations for refs/heads/main:"); notice != (front.bypass != nil) {
				t.Errorf("bypass notice in git's output: %t, want %t\n%s", notice, front.bypass != nil, r.stderr)
			}
			if !rebase {
				if r.code != 1 || !slices.Equal(r.classes(), []failure.Class{failure.Behind}) || s.ref("refs/heads/main") != theirs {
					t.Errorf("exit %d, attempts %v, want one attempt, behind, exit 1", r.code, r.classes())
				}
				return
			}
			if r.code != 0 || !slices.Equal(r.classes(), []failure.Class{failure.Behind, "ok"}) {
				t.Fatalf("exit %d, attempts %v, want behind then ok\n%s", r.code, r.classes(), r.stderr)
			}
			log := gitRun(t, cur.Path, s.dir, s.env, "log", "--format=%s", "-3", "refs/heads/main")
			if log != "add mine\nanother job's theirs\nadd a" {
				t.Errorf("server main:\n%s", log)
			}
			if srv.ReceivePacks() != 2 {
				t.Errorf("%d receive-pack POSTs, want 2", srv.ReceivePacks())
			}
		})
	}
}

// TestForgeRefPhaseFailures: GitHub's commit_refs failure and a 500 in the ref phase
// leave the outcome unknown. refretry asks the remote before pushing again: an update
// that was applied ends the run at once (one POST), one that was not is pushed again.
// Each fault applied and not at stress size; by default commit_refs applied and the
// 500 not (testutil.Cells).
func TestForgeRefPhaseFailures(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	seed := newHTTPSeed(t, combo{cur, cur, "files"})
	type cell struct {
		kind    gitserver.FaultKind
		applied bool
	}
	var cells []cell
	for _, kind := range []gitserver.FaultKind{gitserver.FaultCommitRefs, gitserver.FaultServerError} {
		for _, applied := range []bool{true, false} {
			cells = append(cells, cell{kind, applied})
		}
	}
	for _, cl := range testutil.Cells(t, cells, 0, 3) {
		kind, applied := cl.kind, cl.applied
		name := map[gitserver.FaultKind]string{gitserver.FaultCommitRefs: "commit_refs", gitserver.FaultServerError: "500"}[kind]
		t.Run(name+map[bool]string{true: "/applied", false: "/not-applied"}[applied], func(t *testing.T) {
			t.Parallel()
			s := seed.server(t)
			c, srv := seed.client(t, s, gitserver.Options{Forge: gitserver.ForgeGitHub,
				PushFaults: map[int]gitserver.PushFault{1: {Kind: kind, Apply: applied}}})
			head := c.commit("b", "b")
			r := c.push(smallPolicy(5), nil, "origin", "main")
			if r.code != 0 || r.err != nil {
				t.Fatalf("exit %d, err %v, attempts %v\n%s", r.code, r.err, r.classes(), r.stderr)
			}
			if got := r.classes(); got[0] != failure.Unknown {
				t.Errorf("attempts %v, want unknown-outcome first", got)
			}
			if s.ref("refs/heads/main") != head {
				t.Errorf("server main not at the pushed commit")
			}
			wantPosts := 2
			if applied {
				wantPosts = 1
				if !slices.ContainsFunc(r.notes, func(n string) bool { return strings.Contains(n, "already holds every pushed value") }) {
					t.Errorf("no verification note: %q", r.notes)
				}
			}
			if srv.ReceivePacks() != wantPosts {
				t.Errorf("%d receive-pack POSTs, want %d", srv.ReceivePacks(), wantPosts)
			}
		})
	}
}

// TestForgeRace: GitHub reports a ref created by another push at the same moment as
// "cannot lock ref '<ref>': reference already exists". The remote is checked: when the
// other push created it at this push's value, the run succeeds without pushing again;
// at another value, the retry meets the ref as it now is and stops (a tag that exists).
func TestForgeRace(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	seed := newHTTPSeed(t, combo{cur, cur, "files"})
	for _, same := range []bool{true, false} {
		t.Run(map[bool]string{true: "same value", false: "other value"}[same], func(t *testing.T) {
			t.Parallel()
			s := seed.server(t)
			var c *client
			c, srv := seed.client(t, s, gitserver.Options{Forge: gitserver.ForgeGitHub,
				BeforeReceivePack: func(n int) {
					if n != 1 {
						return
					}
					value := s.ref("refs/heads/main") // not the tag's value
					if same {
						value = c.run("rev-parse", "v1")
					}
					s.run(s.dir, "update-ref", "refs/tags/v1", value, "")
				}})
			c.run("tag", "v1", c.commit("b", "b"))
			// The commit is on the server already (another job pushed it elsewhere),
			// so that the other push can create the tag at it.
			c.run("push", "-q", "file://"+s.dir, "v1^{commit}:refs/ci/other")
			r := c.push(smallPolicy(5), nil, "origin", "refs/tags/v1")
			if got := r.classes(); len(got) == 0 || got[0] != failure.Race {
				t.Fatalf("attempts %v, want race first\n%s", got, r.stderr)
			}
			if same {
				if r.code != 0 || srv.ReceivePacks() != 1 {
					t.Errorf("exit %d after %d POSTs, want 0 after 1", r.code, srv.ReceivePacks())
				}
				return
			}
			if r.code != 1 || !slices.Equal(r.classes(), []failure.Class{failure.Race, failure.Rejected}) {
				t.Errorf("exit %d, attempts %v, want race then rejected (already exists)\n%s", r.code, r.classes(), r.stderr)
			}
		})
	}
}

// TestForgeRules: GitHub's GH006 and GH013, GitLab's protected branch and GitHub's
// refusal of a GitHub App's workflow change end the push after one attempt, even with
// --rebase, exit 1, with git's output and refretry's advice: the rule, or why the
// credentials were refused.
func TestForgeRules(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	seed := newHTTPSeed(t, combo{cur, cur, "files"})
	for name, refusal := range map[string]gitserver.Refusal{
		"GH006": gitserver.GH006("refs/heads/main"), "GH013": gitserver.GH013("refs/heads/main"),
		"GitLab":       gitserver.GitLabProtected("refs/heads/main"),
		"App workflow": gitserver.GitHubAppWorkflow("refs/heads/main", ".github/workflows/ci.yml"),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := seed.server(t)
			c, srv := seed.client(t, s, gitserver.Options{Refuse: []gitserver.Refusal{refusal}})
			c.commit("b", "b")
			r := c.push(smallPolicy(5), func(p *push.Runner) { p.Rebase = true }, "origin", "main")
			// A request that failed before the push reached the server (a stall on a
			// starved machine: the stall floor ends it after 30 s) is retried, as it
			// should be; the refusal ends the run at once.
			var e *failure.Error
			got := r.classes()
			first := slices.IndexFunc(got, func(c failure.Class) bool { return c != failure.Transport })
			if r.code != 1 || !errors.As(r.err, &e) || e.Class != failure.Declined || first != len(got)-1 || srv.ReceivePacks() != 1 {
				t.Fatalf("exit %d, err %v, attempts %v, %d POSTs: want declined at the first push\n%s", r.code, r.err, got, srv.ReceivePacks(), r.stderr)
			}
			want := []string{"does not let these credentials create or change a workflow file, so refretry did not retry"}
			if n := len(refusal.Lines); n > 0 {
				last := strings.TrimPrefix(refusal.Lines[n-1], "error: ")
				if last == "" {
					last = strings.TrimPrefix(refusal.Lines[n-2], "error: ")
				}
				want = []string{last, "refused the push"}
			}
			for _, w := range want {
				if !strings.Contains(e.Advice, w) {
					t.Errorf("advice %q does not say %q", e.Advice, w)
				}
			}
			if !strings.Contains(r.stderr, "("+refusal.Reason+")") {
				t.Errorf("git's output lost:\n%s", r.stderr)
			}
		})
	}
}

// TestForgeWorkflowTimeout: GitHub's check for workflow changes runs out of time and
// rejects every ref of the push (transcribed, internal/harness/gitserver). The remote
// is checked first: a push already applied ends there, one POST; one that was not is
// pushed again after the backoff and lands. When the check keeps timing out, the run
// ends with the budget, and refretry's line names the way round it only when the
// push was creating the ref.
func TestForgeWorkflowTimeout(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	seed := newHTTPSeed(t, combo{cur, cur, "files"})
	timeout := func(posts ...int) map[int]gitserver.PushFault {
		m := map[int]gitserver.PushFault{}
		for _, n := range posts {
			m[n] = gitserver.PushFault{Kind: gitserver.FaultWorkflowTimeout}
		}
		return m
	}
	t.Run("retried", func(t *testing.T) {
		t.Parallel()
		s := seed.server(t)
		c, srv := seed.client(t, s, gitserver.Options{Forge: gitserver.ForgeGitHub, PushFaults: timeout(1)})
		head := c.commit("b", "b")
		r := c.push(smallPolicy(5), nil, "origin", "main")
		if r.code != 0 || !slices.Equal(r.classes(), []failure.Class{failure.Unknown, "ok"}) || srv.ReceivePacks() != 2 {
			t.Fatalf("exit %d, attempts %v, %d POSTs: want unknown-outcome, then ok, 2 POSTs\n%s", r.code, r.classes(), srv.ReceivePacks(), r.stderr)
		}
		if s.ref("refs/heads/main") != head || strings.Contains(r.stderr, "Unable to determine") {
			t.Errorf("server main %s, want %s; the retried attempt's output shown:\n%s", s.ref("refs/heads/main"), head, r.stderr)
		}
	})
	t.Run("applied", func(t *testing.T) {
		t.Parallel()
		s := seed.server(t)
		c, srv := seed.client(t, s, gitserver.Options{Forge: gitserver.ForgeGitHub,
			PushFaults: map[int]gitserver.PushFault{1: {Kind: gitserver.FaultWorkflowTimeout, Apply: true}}})
		head := c.commit("b", "b")
		r := c.push(smallPolicy(5), nil, "origin", "main")
		if r.code != 0 || srv.ReceivePacks() != 1 || s.ref("refs/heads/main") != head {
			t.Fatalf("exit %d after %d POSTs, want 0 after 1\n%s", r.code, srv.ReceivePacks(), r.stderr)
		}
		if !slices.ContainsFunc(r.notes, func(n string) bool { return strings.Contains(n, "already holds every pushed value") }) {
			t.Errorf("no verification note: %q", r.notes)
		}
	})
	for _, tc := range []struct {
		name, dst string
		advice    bool
	}{{"persists on a creation", "refs/heads/new", true}, {"persists on an update", "refs/heads/main", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := seed.server(t)
			c, srv := seed.client(t, s, gitserver.Options{Forge: gitserver.ForgeGitHub, PushFaults: timeout(1, 2, 3)})
			c.commit("b", "b")
			before := s.ref(tc.dst)
			r := c.push(smallPolicy(3), nil, "origin", "HEAD:"+tc.dst)
			want := []failure.Class{failure.Unknown, failure.Unknown, failure.Unknown}
			var e *failure.Error
			if r.code != 1 || !slices.Equal(r.classes(), want) || srv.ReceivePacks() != 3 || !errors.As(r.err, &e) {
				t.Fatalf("exit %d, err %v, attempts %v, %d POSTs: want 3 unknown-outcome attempts, exit 1\n%s",
					r.code, r.err, r.classes(), srv.ReceivePacks(), r.stderr)
			}
			if s.ref(tc.dst) != before {
				t.Errorf("server %s moved", tc.dst)
			}
			if !strings.Contains(r.stderr, "(Unable to determine if workflow can be created or updated due to timeout") {
				t.Errorf("git's output lost:\n%s", r.stderr)
			}
			wantAdvice := ""
			if tc.advice {
				wantAdvice = "GitHub's check for workflow changes timed out creating refs/heads/new, as it may on every new ref"
			}
			if !strings.HasPrefix(e.Advice, wantAdvice) || (wantAdvice == "") != (e.Advice == "") {
				t.Errorf("Advice %q, want %q…", e.Advice, wantAdvice)
			}
		})
	}
}
