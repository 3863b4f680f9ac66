package forgeapi_test

import (
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/forgeapi"
	"github.com/refretry/refretry/internal/harness/testutil"
)

const repoPath = "/repos/acme/widgets/git"

// TestGitHubStagedTreeThroughREST is the route issue 39 prefers, end to end: a job
// pushes its commit to a staging ref over smart HTTP, then makes the commit on the
// branch's head through the REST API from the staged tree, and moves the branch
// with force: false. The branch gets exactly the job's content (an executable and
// a symbolic link included), in a commit the forge signed and git verify-commit
// accepts.
func TestGitHubStagedTreeThroughREST(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	w := clone(t, s)
	w.commitAll("job 1", map[string]string{"bin/run": "#!/bin/sh\necho run\n"}, map[string]string{"run": "bin/run"})
	w.run("push", "-q", "origin", "HEAD:refs/refretry/staging/job-1")
	tree, parent := w.run("rev-parse", "HEAD^{tree}"), w.run("rev-parse", "HEAD^")

	gh := github(t, s, forgeapi.AppToken)
	c := gh.commit("job 1\n", tree, parent)
	if c.status != 201 || c.get("verification", "verified") != true || c.str("verification", "reason") != "valid" {
		t.Fatalf("POST commits: %d %s", c.status, c.body)
	}
	if u := gh.do("PATCH", repoPath+"/refs/heads/main", map[string]any{"sha": c.str("sha"), "force": false}); u.status != 200 {
		t.Fatalf("PATCH: %d %s", u.status, u.body)
	}
	w.run("fetch", "-q", "origin")
	if got := w.run("rev-parse", "origin/main^{tree}"); got != tree {
		t.Errorf("the branch's tree is %s, the staged one %s", got, tree)
	}
	if got := w.run("log", "-1", "--format=%an <%ae> / %cn <%ce>", "origin/main"); got !=
		"github-actions[bot] <41898282+github-actions[bot]@users.noreply.github.com> / GitHub <noreply@github.com>" {
		t.Errorf("author / committer: %s", got)
	}
	if err := w.verify(s, c.str("sha")); err != nil {
		t.Error(err)
	}
	if r := gh.do("GET", "/repos/acme/widgets/commits/main", nil); r.str("sha") != c.str("sha") ||
		r.get("commit", "verification", "verified") != true || r.str("parents", 0, "sha") != parent {
		t.Errorf("GET commits/main: %d %s", r.status, r.body)
	}
}

// blobID is git's id of a blob holding data.
func blobID(data string) string {
	h := sha1.Sum([]byte(fmt.Sprintf("blob %d\x00%s", len(data), data)))
	return hex.EncodeToString(h[:])
}

// TestGitHubRESTObjects: blobs, trees and commits as GitHub's git data API makes
// them, and its refusals of requests that name what is not there.
func TestGitHubRESTObjects(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	gh := github(t, s, forgeapi.UserToken)
	head, tree := tip(s, "main")
	binary := "bin\x00ary\n"
	cases := []struct {
		name, path string
		body       any
		status     int
		check      func(reply) string // what is wrong with the answer, "" when nothing
	}{
		{"utf-8 blob", "/blobs", map[string]string{"content": "hello\n"}, 201, shaIs(blobID("hello\n"))},
		{"base64 blob", "/blobs", map[string]string{"content": base64.StdEncoding.EncodeToString([]byte(binary)), "encoding": "base64"}, 201, shaIs(blobID(binary))},
		{"bad base64", "/blobs", map[string]string{"content": "!!", "encoding": "base64"}, 422, nil},
		{"tree of every mode", "/trees", map[string]any{"base_tree": tree, "tree": []map[string]any{
			{"path": "bin/run", "mode": "100755", "type": "blob", "content": "#!/bin/sh\n"},
			{"path": "run", "mode": "120000", "type": "blob", "content": "bin/run"},
			{"path": "vendor/lib", "mode": "160000", "type": "commit", "sha": head},
			{"path": "copy", "mode": "040000", "type": "tree", "sha": tree},
			{"path": "README.md", "mode": "100644", "type": "blob", "sha": nil},
		}}, 201, treeIs(s, "100755 blob bin/run\n100644 blob copy/README.md\n120000 blob run\n160000 commit vendor/lib")},
		{"unknown mode", "/trees", treeOf("100600", "blob", blobID("hello\n")), 422, nil},
		{"type against mode", "/trees", treeOf("100644", "tree", tree), 422, nil},
		{"missing blob", "/trees", treeOf("100644", "blob", strings.Repeat("1", 40)), 422, nil},
		{"not a base tree", "/trees", map[string]any{"base_tree": head, "tree": []any{}}, 422, nil},
		{"user's commit", "/commits", map[string]any{"message": "m\n", "tree": tree, "parents": []string{head}}, 201, unsigned},
		{"no message", "/commits", map[string]any{"tree": tree}, 422, nil},
		{"missing tree", "/commits", map[string]any{"message": "m", "tree": strings.Repeat("2", 40)}, 422, messageIs("Tree SHA does not exist")},
		{"parent not a commit", "/commits", map[string]any{"message": "m", "tree": tree, "parents": []string{tree}}, 422,
			messageIs("Parent SHA does not exist or is not a commit object")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := gh.do("POST", repoPath+c.path, c.body)
			if r.status != c.status {
				t.Fatalf("%d %s, want %d", r.status, r.body, c.status)
			}
			if c.check != nil {
				if what := c.check(r); what != "" {
					t.Errorf("%s\n%s", what, r.body)
				}
			}
		})
	}
}

func treeOf(mode, typ, sha string) map[string]any {
	return map[string]any{"tree": []map[string]any{{"path": "f", "mode": mode, "type": typ, "sha": sha}}}
}

func shaIs(want string) func(reply) string {
	return func(r reply) string {
		if r.str("sha") != want {
			return "sha is not " + want
		}
		return ""
	}
}

func messageIs(want string) func(reply) string {
	return func(r reply) string {
		if r.str("message") != want {
			return fmt.Sprintf("message is not %q", want)
		}
		return ""
	}
}

// treeIs checks the made tree's listing (ls-tree -r: mode, type, path).
func treeIs(s *forgeapi.Server, want string) func(reply) string {
	return func(r reply) string {
		got := s.Git("ls-tree", "-r", "--format=%(objectmode) %(objecttype) %(path)", r.str("sha"))
		if got != want {
			return "tree:\n" + got + "\nwant:\n" + want
		}
		return ""
	}
}

// unsigned: a commit GitHub did not sign, and says so.
func unsigned(r reply) string {
	if r.get("verification", "verified") != false || r.str("verification", "reason") != "unsigned" {
		return "verification is not unsigned"
	}
	return ""
}

// TestGitHubRESTRefs: reading, creating and moving refs, with GitHub's answers when
// the ref exists already, does not exist, or would not move forward.
func TestGitHubRESTRefs(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	gh := github(t, s, forgeapi.UserToken)
	head, tree := tip(s, "main")
	child := gh.commit("child\n", tree, head).str("sha")
	side := gh.commit("side\n", tree, head).str("sha")
	steps := []struct {
		method, path string
		body         any
		status       int
		message      string // for a refusal
		after        string // the value of refs/heads/feature afterwards ("" for none)
	}{
		{"GET", "/ref/heads/feature", nil, 404, "Not Found", ""},
		{"POST", "/refs", map[string]string{"ref": "heads/feature", "sha": head}, 422, "Reference name must start with 'refs/' and have at least two slashes.", ""},
		{"POST", "/refs", map[string]string{"ref": "refs/heads/feature", "sha": strings.Repeat("3", 40)}, 422, "Object does not exist", ""},
		{"POST", "/refs", map[string]string{"ref": "refs/heads/feature", "sha": head}, 201, "", head},
		{"POST", "/refs", map[string]string{"ref": "refs/heads/feature", "sha": child}, 422, "Reference already exists", head},
		{"GET", "/ref/heads/feature", nil, 200, "", head},
		{"PATCH", "/refs/heads/feature", map[string]any{"sha": child}, 200, "", child},
		{"PATCH", "/refs/heads/feature", map[string]any{"sha": side, "force": false}, 422, "Update is not a fast forward", child},
		{"PATCH", "/refs/heads/feature", map[string]any{"sha": side, "force": true}, 200, "", side},
		{"PATCH", "/ref/heads/feature", map[string]any{"sha": head, "force": true}, 404, "Not Found", side}, // the singular path is read-only
		{"PATCH", "/refs/heads/nowhere", map[string]any{"sha": head}, 422, "Reference does not exist", side},
		{"PATCH", "/refs/heads/feature", map[string]any{"sha": strings.Repeat("4", 40)}, 422, "Object does not exist", side},
	}
	for i, st := range steps {
		r := gh.do(st.method, repoPath+st.path, st.body)
		if r.status != st.status || st.message != "" && r.str("message") != st.message {
			t.Errorf("step %d, %s %s: %d %s\nwant %d %q", i, st.method, st.path, r.status, r.body, st.status, st.message)
		}
		if st.status < 300 && st.method != "PATCH" && st.method != "POST" && r.str("object", "sha") != st.after {
			t.Errorf("step %d: object.sha %q, want %q", i, r.str("object", "sha"), st.after)
		}
		if got := s.Head("feature"); got != st.after {
			t.Errorf("step %d: feature is at %q, want %q", i, got, st.after)
		}
	}
}

// TestGitHubRESTRefusals: authentication, permission and ruleset refusals, in
// GitHub's words, and nothing moved by a refused update.
func TestGitHubRESTRefusals(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitHub(t, forgeapi.Options{Rules: []forgeapi.Rule{
		{Branch: "signed", Kind: forgeapi.RequireSignatures}, {Branch: "reviewed", Kind: forgeapi.RequirePullRequest},
	}})
	head, tree := tip(s, "main")
	for _, b := range []string{"signed", "reviewed"} {
		s.Git("update-ref", "refs/heads/"+b, head)
	}
	commit := func(token string) string {
		return github(t, s, token).commit("m\n", tree, head).str("sha")
	}
	byApp, byUser := commit(forgeapi.AppToken), commit(forgeapi.UserToken)
	violation := func(rule string) string { return "Repository rule violations found\n\n" + rule + "\n\n" }
	cases := []struct {
		name, token, method, path string
		body                      any
		status                    int
		message                   string
	}{
		{"no token", "", "GET", repoPath + "/ref/heads/main", nil, 401, "Requires authentication"},
		{"unknown token", "ghs_nobody", "GET", repoPath + "/ref/heads/main", nil, 401, "Bad credentials"},
		{"read-only token reads", forgeapi.ReadOnlyToken, "GET", repoPath + "/ref/heads/main", nil, 200, ""},
		{"read-only token writes", forgeapi.ReadOnlyToken, "POST", repoPath + "/blobs", map[string]string{"content": "x"}, 403, "Resource not accessible by integration"},
		{"another repository", forgeapi.AppToken, "GET", "/repos/acme/other/git/ref/heads/main", nil, 404, "Not Found"},
		{"a commit that is not there", forgeapi.AppToken, "GET", "/repos/acme/widgets/commits/nowhere", nil, 422, "No commit found for SHA: nowhere"},
		{"unsigned commit, signed branch", forgeapi.UserToken, "PATCH", repoPath + "/refs/heads/signed", map[string]string{"sha": byUser}, 422,
			violation("Commits must have verified signatures.")},
		{"unsigned commit, new ref under a signed branch's name", forgeapi.UserToken, "POST", repoPath + "/refs", map[string]string{"ref": "refs/heads/signed", "sha": byUser}, 422,
			violation("Commits must have verified signatures.")},
		{"any commit, reviewed branch", forgeapi.AppToken, "PATCH", repoPath + "/refs/heads/reviewed", map[string]string{"sha": byApp}, 422,
			violation("Changes must be made through a pull request.")},
		{"signed commit, signed branch", forgeapi.UserToken, "PATCH", repoPath + "/refs/heads/signed", map[string]string{"sha": byApp}, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			github(t, s, c.token).do(c.method, c.path, c.body).want(t, c.status, c.message)
		})
	}
	if got := s.Head("reviewed"); got != head {
		t.Errorf("a refused update moved the branch to %s", got)
	}
}

// TestGitHubRESTRace: updates racing from the same head, each a fast-forward of it:
// exactly one lands, every other gets "Update is not a fast forward".
func TestGitHubRESTRace(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	gh := github(t, s, forgeapi.AppToken)
	head, tree := tip(s, "main")
	n := testutil.Scale(t, 6, 24)
	commits := make([]string, n)
	for i := range commits {
		commits[i] = gh.commit(fmt.Sprintf("job %d\n", i), tree, head).str("sha")
	}
	replies := race(n, func(i int) reply {
		return gh.do("PATCH", repoPath+"/refs/heads/main", map[string]any{"sha": commits[i], "force": false})
	})
	var won []string
	for i, r := range replies {
		switch {
		case r.status == 200:
			won = append(won, commits[i])
		case r.status != 422 || r.str("message") != "Update is not a fast forward":
			t.Errorf("update %d: %d %s", i, r.status, r.body)
		}
	}
	if len(won) != 1 || s.Head("main") != won[0] {
		t.Errorf("%d of %d updates landed (%v); main is at %s", len(won), n, won, s.Head("main"))
	}
}

// TestGitHubSigning: with either kind of key, git verify-commit accepts the commits
// the forge signs (an App token's REST commit that names no author or committer)
// and refuses the others: a user token's, an App token's that names an author, and
// one the job signed with its own key, which the API calls unknown_key.
func TestGitHubSigning(t *testing.T) {
	t.Parallel()
	for _, format := range testutil.SignFormats {
		t.Run(format, func(t *testing.T) {
			t.Parallel()
			key := testutil.NewSigner(t, format)
			s := forgeapi.StartGitHub(t, forgeapi.Options{Signer: &key})
			w := clone(t, s)
			own := testutil.NewSigner(t, "ssh")
			w.run(append(own.ConfigArgs(), "commit", "-q", "--allow-empty", "-m", "signed by the job")...)
			w.run("push", "-q", "origin", "HEAD:refs/refretry/staging/own")
			head, tree := tip(s, "main")
			cases := []struct {
				name, token string
				author      map[string]string
				reason      string
			}{
				{"app token", forgeapi.AppToken, nil, "valid"},
				{"app token naming an author", forgeapi.AppToken, map[string]string{"name": "Job", "email": "job@example.invalid"}, "unsigned"},
				{"user token", forgeapi.UserToken, nil, "unsigned"},
			}
			oids := map[string]string{"job's own key": w.run("rev-parse", "HEAD")}
			reasons := map[string]string{"job's own key": "unknown_key"}
			for _, c := range cases {
				body := map[string]any{"message": c.name + "\n", "tree": tree, "parents": []string{head}}
				if c.author != nil {
					body["author"] = c.author
				}
				oids[c.name] = github(t, s, c.token).do("POST", repoPath+"/commits", body).str("sha")
				reasons[c.name] = c.reason
			}
			for name, oid := range oids {
				github(t, s, forgeapi.AppToken).do("POST", repoPath+"/refs", map[string]string{"ref": "refs/checks/" + oid, "sha": oid})
				w.run("fetch", "-q", "origin", "refs/checks/"+oid)
				valid := reasons[name] == "valid"
				for _, r := range []reply{
					github(t, s, forgeapi.AppToken).do("GET", repoPath+"/commits/"+oid, nil),
					github(t, s, forgeapi.AppToken).do("GET", "/repos/acme/widgets/commits/"+oid, nil),
				} {
					v, _ := r.get("verification").(map[string]any)
					if v == nil {
						v, _ = r.get("commit", "verification").(map[string]any)
					}
					if v["verified"] != valid || v["reason"] != reasons[name] {
						t.Errorf("%s: verification %v, want verified %v, reason %s", name, v, valid, reasons[name])
					}
				}
				if err := w.verify(s, oid); (err == nil) != valid {
					t.Errorf("%s: git verify-commit: %v, want success %v", name, err, valid)
				}
			}
		})
	}
}
