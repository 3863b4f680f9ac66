package gitserver_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestRefusalsTranscribed: GitHub's and GitLab's policy refusals print their
// transcribed remote lines and reason, for the refused ref and for the push's other
// ref, and apply nothing; a push that names no refused ref goes through.
func TestRefusalsTranscribed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		refusal gitserver.Refusal
		reason  string
		lines   func(repo string) []string
	}{
		{"GitHub GH006", gitserver.GH006("refs/heads/main"), "protected branch hook declined", func(string) []string {
			return []string{"error: GH006: Protected branch update failed for refs/heads/main.",
				"error: Changes must be made through a pull request."}
		}},
		{"GitHub GH006 listed", gitserver.GH006List("refs/heads/main"), "protected branch hook declined", func(string) []string {
			return []string{"error: GH006: Protected branch update failed for refs/heads/main.", "",
				"- Changes must be made through a pull request."}
		}},
		{"GitHub GH013", gitserver.GH013("refs/heads/main"), "push declined due to repository rule violations", func(repo string) []string {
			return []string{"error: GH013: Repository rule violations found for refs/heads/main.",
				"Review all repository rules at " + repo + "/rules?ref=refs%2Fheads%2Fmain", "",
				"- Changes must be made through a pull request.", ""}
		}},
		{"GitLab protected branch", gitserver.GitLabProtected("refs/heads/main"), "pre-receive hook declined", func(string) []string {
			return []string{"GitLab: You are not allowed to push code to protected branches on this project."}
		}},
		{"GitHub App workflow", gitserver.GitHubAppWorkflow("refs/heads/main", ".github/workflows/ci.yml"),
			"refusing to allow a GitHub App to create or update workflow `.github/workflows/ci.yml` without `workflows` permission",
			func(string) []string { return nil }},
	}
	old, cur := testutil.SystemGit(t), testutil.NewGit(t)
	// At the default size each refusal once, against each client in turn.
	for _, c := range cells(t, []combo{{cur, cur, "files"}, {old, cur, "files"}}, len(cases), 0) {
		cb, tc := c.cb, cases[c.i]
		t.Run(cb.name()+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRaced(t, cb, gitserver.Options{Refuse: []gitserver.Refusal{tc.refusal}}, nil)
			url := r.srv.URL("r.git")
			p := r.w.push("--porcelain", "origin", "main", "main:refs/heads/side")
			wantOut := rejectedMainAndSide(url, tc.reason)
			wantErr := remoteLines(tc.lines(r.srv.BaseURL()+"/r")...) + failedTo(url)
			if p.code != 1 || p.stdout != wantOut || p.stderr != wantErr {
				t.Errorf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", p.code, p.stdout, wantOut, p.stderr, wantErr)
			}
			if r.rem.ref("refs/heads/main") != r.a || r.rem.ref("refs/heads/side") != "" {
				t.Errorf("a refused push was applied")
			}
			if p := r.w.push("--porcelain", "origin", "main:refs/heads/side"); p.code != 0 || r.rem.ref("refs/heads/side") != r.c {
				t.Errorf("a push of an unrefused ref: exit %d, server's side %q\n%s%s", p.code, r.rem.ref("refs/heads/side"), p.stdout, p.stderr)
			}
		})
	}
}

// rejectedMainAndSide is the porcelain of a push of main to main and side that the
// server refused for reason.
func rejectedMainAndSide(url, reason string) string {
	return "To " + url + "\n" +
		"!\trefs/heads/main:refs/heads/main\t[remote rejected] (" + reason + ")\n" +
		"!\trefs/heads/main:refs/heads/side\t[remote rejected] (" + reason + ")\n" +
		"Done\n"
}

// TestGitHubTranscribedRefPhaseFailures: GitHub's commit_refs failure and its 5xx in
// the ref phase, each with the push applied by the real receive-pack and without it:
// the client prints the same either way, and the server's refs say which it was.
func TestGitHubTranscribedRefPhaseFailures(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		kind   gitserver.FaultKind
		lines  []string
		reason string
	}{
		{"commit_refs", gitserver.FaultCommitRefs, []string{"fatal error in commit_refs"}, "failure"},
		{"Internal Server Error", gitserver.FaultServerError, []string{"Internal Server Error"}, "Internal Server Error"},
		{"workflow check timeout", gitserver.FaultWorkflowTimeout, nil,
			"Unable to determine if workflow can be created or updated due to timeout; `workflows` scope may be required."},
	}
	// At the default size each of the six (fault, applied or not) once, against the
	// combos in turn, so each combo meets at least one.
	for _, c := range cells(t, combos(t), 2*len(cases), 0) {
		cb, tc, apply := c.cb, cases[c.i/2], c.i%2 == 0
		name := cb.name() + "/" + tc.name + "/not applied"
		if apply {
			name = cb.name() + "/" + tc.name + "/applied"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := newRaced(t, cb, gitserver.Options{PushFaults: map[int]gitserver.PushFault{1: {Kind: tc.kind, Apply: apply}}}, nil)
			url := r.srv.URL("r.git")
			p := r.w.push("--porcelain", "origin", "main", "main:refs/heads/side")
			wantOut := rejectedMainAndSide(url, tc.reason)
			wantErr := remoteLines(tc.lines...) + failedTo(url)
			if p.code != 1 || p.stdout != wantOut || p.stderr != wantErr {
				t.Errorf("exit %d\nstdout:\n%s\nwant:\n%s\nstderr:\n%s\nwant:\n%s", p.code, p.stdout, wantOut, p.stderr, wantErr)
			}
			wantMain, wantSide := r.a, ""
			if apply {
				wantMain, wantSide = r.c, r.c
			}
			if got := r.rem.ref("refs/heads/main"); got != wantMain {
				t.Errorf("server's main %s, want %s", got, wantMain)
			}
			if got := r.rem.ref("refs/heads/side"); got != wantSide {
				t.Errorf("server's side %q, want %q", got, wantSide)
			}
		})
	}
}

// TestGitHubTranscribedBypass: a push that names a ref whose rules the actor may
// bypass gets GitHub's notice before the rest of the answer: before a lost race folded
// as GitHub folds it, before git's own success, and before a fault's answer; a push
// that names no such ref gets none.
func TestGitHubTranscribedBypass(t *testing.T) {
	t.Parallel()
	notice := remoteLines("Bypassed rule violations for refs/heads/main:", "", "- Changes must be made through a pull request.", "")
	race := lockRaces[0]
	for _, cb := range coveringCombos(t) {
		t.Run(cb.name()+"/lost race", func(t *testing.T) {
			t.Parallel()
			r := newRaced(t, cb, gitserver.Options{Forge: gitserver.ForgeGitHub,
				Bypass: []gitserver.Bypass{gitserver.GitHubBypass("refs/heads/main")}}, race.move)
			url := r.srv.URL("r.git")
			p := r.w.push("--porcelain", "origin", "main")
			if want := porcelain(url, "refs/heads/main", "cannot lock ref 'refs/heads/main': "+race.detail(r)); p.code != 1 || p.stdout != want {
				t.Errorf("exit %d, stdout:\n%s\nwant:\n%s", p.code, p.stdout, want)
			}
			if want := notice + failedTo(url); p.stderr != want {
				t.Errorf("stderr:\n%s\nwant:\n%s", p.stderr, want)
			}
		})
	}
	cur := testutil.NewGit(t)
	cb := combo{cur, cur, "files"}
	t.Run("success", func(t *testing.T) {
		t.Parallel()
		r := newRaced(t, cb, gitserver.Options{Bypass: []gitserver.Bypass{gitserver.GitHubBypass("refs/heads/main")}}, nil)
		p := r.w.push("--porcelain", "origin", "main", "main:refs/heads/side")
		if p.code != 0 || p.stderr != notice || r.rem.ref("refs/heads/main") != r.c {
			t.Errorf("exit %d, server main %s (want %s), stderr:\n%s\nwant:\n%s", p.code, r.rem.ref("refs/heads/main"), r.c, p.stderr, notice)
		}
		if p := r.w.push("--porcelain", "origin", "main:refs/heads/other2"); p.code != 0 || p.stderr != "" {
			t.Errorf("a push that names no bypassed ref: exit %d, stderr:\n%s", p.code, p.stderr)
		}
	})
	t.Run("fault", func(t *testing.T) {
		t.Parallel()
		r := newRaced(t, cb, gitserver.Options{Bypass: []gitserver.Bypass{gitserver.GitHubBypass("refs/heads/main")},
			PushFaults: map[int]gitserver.PushFault{1: {Kind: gitserver.FaultCommitRefs}}}, nil)
		url := r.srv.URL("r.git")
		p := r.w.push("--porcelain", "origin", "main")
		if want := notice + remoteLines("fatal error in commit_refs") + failedTo(url); p.code != 1 || p.stderr != want {
			t.Errorf("exit %d, stderr:\n%s\nwant:\n%s", p.code, p.stderr, want)
		}
	})
}

// TestDrop: the connection of a receive-pack POST closes unanswered, after the push
// was applied or without it. Without keep-alive, libcurl does not send it again.
func TestDrop(t *testing.T) {
	t.Parallel()
	// At the default size each combo once, applied and not in turn.
	for _, c := range cells(t, combos(t), 2, 0) {
		cb, apply := c.cb, c.i == 0
		t.Run(cb.name()+"/apply="+map[bool]string{true: "yes", false: "no"}[apply], func(t *testing.T) {
			t.Parallel()
			r := newRaced(t, cb, gitserver.Options{NoKeepAlive: true,
				PushFaults: map[int]gitserver.PushFault{1: {Kind: gitserver.FaultDrop, Apply: apply}}}, nil)
			p := r.w.push("--porcelain", "origin", "main")
			// libcurl's "Empty reply", then send-pack's view of the lost answer.
			wantErr := "error: RPC failed; curl 52 Empty reply from server\n" +
				"send-pack: unexpected disconnect while reading sideband packet\n" +
				"fatal: the remote end hung up unexpectedly\n"
			if p.code != 1 || p.stdout != "Done\n" || p.stderr != wantErr {
				t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 1, Done and\n%s", p.code, p.stdout, p.stderr, wantErr)
			}
			want := r.a
			if apply {
				want = r.c
			}
			if got := r.rem.ref("refs/heads/main"); got != want {
				t.Errorf("server's main %s, want %s", got, want)
			}
			if n := r.srv.ReceivePacks(); n != 1 {
				t.Errorf("%d receive-pack POSTs, want 1", n)
			}
			// Nothing else is broken: the next push goes through.
			if p := r.w.push("--porcelain", "origin", "main"); p.code != 0 || r.rem.ref("refs/heads/main") != r.c {
				t.Errorf("push after the drop: exit %d\n%s%s", p.code, p.stdout, p.stderr)
			}
		})
	}
}

// TestDownAfterDrop: once a push was dropped, receive-pack answers 503 (its
// advertisement, so no POST is made) while fetching still works.
func TestDownAfterDrop(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	r := newRaced(t, combo{cur, cur, "files"}, gitserver.Options{NoKeepAlive: true, DownAfterDrop: true,
		PushFaults: map[int]gitserver.PushFault{1: {Kind: gitserver.FaultDrop, Apply: true}}}, nil)
	if p := r.w.push("origin", "main"); p.code == 0 {
		t.Fatalf("a dropped push exited 0\n%s", p.stderr)
	}
	if out := r.w.run("ls-remote", "origin", "refs/heads/main"); out != r.c+"\trefs/heads/main" {
		t.Errorf("ls-remote after the drop: %q, want main at %s", out, r.c)
	}
	r.w.commit("d")
	p := r.w.push("origin", "main")
	if p.code == 0 || !strings.Contains(p.stderr, "503") {
		t.Errorf("push after the drop: exit %d, want a 503\n%s", p.code, p.stderr)
	}
	if n := r.srv.ReceivePacks(); n != 1 {
		t.Errorf("%d receive-pack POSTs, want 1", n)
	}
}

// TestReceivePackNumbers: BeforeReceivePack sees each receive-pack POST's number, the
// faulted one included, and PushFaults goes by the same numbers; fetches count only
// in Requests.
func TestReceivePackNumbers(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	var mu sync.Mutex
	var seen []int
	opts := gitserver.Options{
		PushFaults:        map[int]gitserver.PushFault{2: {Kind: gitserver.FaultServerError}},
		BeforeReceivePack: func(n int) { mu.Lock(); seen = append(seen, n); mu.Unlock() },
	}
	r := newRaced(t, combo{cur, cur, "files"}, opts, nil)
	r.w.run("fetch", "-q", "origin")
	results := []int{
		r.w.push("origin", "main:refs/heads/x").code, // 1
		r.w.push("origin", "main:refs/heads/y").code, // 2, faulted
		r.w.push("origin", "main:refs/heads/z").code, // 3
	}
	if !slices.Equal(results, []int{0, 1, 0}) {
		t.Errorf("exit codes %v, want [0 1 0]", results)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(seen, []int{1, 2, 3}) {
		t.Errorf("BeforeReceivePack saw %v, want [1 2 3]", seen)
	}
	if n := r.srv.ReceivePacks(); n != 3 {
		t.Errorf("ReceivePacks %d, want 3", n)
	}
	// A GET and a POST for each push; the fetch (protocol v2) makes a GET and an
	// upload-pack POST for ls-refs.
	if n := r.srv.Requests(); n != 8 {
		t.Errorf("Requests %d, want 8", n)
	}
}

// TestStall: the stalled request sends half of its answer and then nothing; Close
// ends it, closing the connection without ending the answer.
func TestStall(t *testing.T) {
	t.Parallel()
	rem := newRemote(t, testutil.NewGit(t), "files")
	s := rem.serve(gitserver.Options{After: 1, Stall: 1})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	url := s.URL("r.git") + "/info/refs?service=git-upload-pack"
	resp, err := c.Get(url) // request 1: spared
	if err != nil {
		t.Fatal(err)
	}
	full, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || len(full) < 2 {
		t.Fatalf("advertisement %q: %v", full, err)
	}
	resp, err = c.Get(url) // request 2: stalled
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	half := make([]byte, len(full)/2)
	if _, err := io.ReadFull(resp.Body, half); err != nil || !bytes.Equal(half, full[:len(full)/2]) {
		t.Fatalf("first half %q (%v), want %q", half, err, full[:len(full)/2])
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	rest, err := io.ReadAll(resp.Body)
	if err == nil || len(rest) != 0 {
		t.Errorf("after the half: %q, %v; want nothing and a broken answer", rest, err)
	}
	<-closed
}

// TestNoKeepAlive: the server says it closes the connection after each answer.
func TestNoKeepAlive(t *testing.T) {
	t.Parallel()
	rem := newRemote(t, testutil.NewGit(t), "files")
	for _, off := range []bool{false, true} {
		s := rem.serve(gitserver.Options{NoKeepAlive: off})
		resp, err := http.Get(s.URL("r.git") + "/info/refs?service=git-upload-pack")
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Close != off {
			t.Errorf("NoKeepAlive %v: the answer's Connection: close is %v", off, resp.Close)
		}
	}
}

// TestOwnBytes: what the client receives from ForgeGit, and from ForgeGitHub when it
// has nothing to fold, is byte for byte what git http-backend answers the same POST
// on the same repository.
func TestOwnBytes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		forge gitserver.Forge
		race  bool
		code  int
	}{
		{"git, lost race", gitserver.ForgeGit, true, 1},
		{"git, applied", gitserver.ForgeGit, false, 0},
		{"github, applied", gitserver.ForgeGitHub, false, 0},
		{"gitlab, applied", gitserver.ForgeGitLab, false, 0},
	}
	// At the default size each case once, each against another combo.
	for _, c := range cells(t, combos(t), len(cases), 0) {
		cb, tc := c.cb, cases[c.i]
		t.Run(cb.name()+"/"+tc.name, func(t *testing.T) {
			t.Parallel()
			snapshot := t.TempDir()
			r := newRaced(t, cb, gitserver.Options{Forge: tc.forge}, func(r *raced) {
				if tc.race {
					r.rem.run("update-ref", "refs/heads/main", r.b)
				}
				// The repository as receive-pack will find it.
				if out, err := exec.Command("cp", "-a", r.rem.dir, snapshot).CombinedOutput(); err != nil {
					t.Errorf("cp: %v\n%s", err, out)
				}
			})
			var (
				mu                sync.Mutex
				reqBody, respBody []byte
				reqHeader         http.Header
			)
			proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
				body, _ := io.ReadAll(q.Body)
				out, err := http.NewRequest(q.Method, r.srv.BaseURL()+q.URL.RequestURI(), bytes.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				out.Header = q.Header.Clone()
				resp, err := http.DefaultTransport.RoundTrip(out)
				if err != nil {
					t.Error(err)
					return
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if q.Method == http.MethodPost {
					mu.Lock()
					reqBody, respBody, reqHeader = body, got, q.Header.Clone()
					mu.Unlock()
				}
				for k, v := range resp.Header {
					w.Header()[k] = v
				}
				w.WriteHeader(resp.StatusCode)
				w.Write(got)
			}))
			defer proxy.Close()
			r.w.run("remote", "set-url", "origin", proxy.URL+"/r.git")
			if p := r.w.push("--porcelain", "origin", "main"); p.code != tc.code {
				t.Fatalf("exit %d, want %d\n%s%s", p.code, tc.code, p.stdout, p.stderr)
			}
			mu.Lock()
			defer mu.Unlock()
			h := &cgi.Handler{
				Path: cb.server.Path, Args: []string{"http-backend"}, Dir: snapshot,
				Env: append([]string{"GIT_PROJECT_ROOT=" + snapshot, "GIT_HTTP_EXPORT_ALL=1",
					"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.receivepack", "GIT_CONFIG_VALUE_0=true"}, r.rem.env...),
			}
			q := httptest.NewRequest(http.MethodPost, "/"+filepath.Base(r.rem.dir)+"/git-receive-pack", bytes.NewReader(reqBody))
			q.Header = reqHeader
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, q)
			if !bytes.Equal(respBody, rec.Body.Bytes()) {
				t.Errorf("the client got\n%q\nhttp-backend answers\n%q", respBody, rec.Body.Bytes())
			}
			if tc.race && !bytes.Contains(respBody, []byte("but expected")) {
				t.Errorf("no lost race in %q", respBody)
			}
		})
	}
}
