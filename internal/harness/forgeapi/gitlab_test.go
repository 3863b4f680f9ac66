package forgeapi_test

import (
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/refretry/refretry/internal/harness/forgeapi"
	"github.com/refretry/refretry/internal/harness/testutil"
)

const commitsPath = "/projects/1/repository/commits"

// action is one action of a GitLab commit request.
func action(kind, path string, kv ...any) map[string]any {
	a := map[string]any{"action": kind, "file_path": path}
	for i := 0; i+1 < len(kv); i += 2 {
		a[kv[i].(string)] = kv[i+1]
	}
	return a
}

// commitBody is a commit request's body on branch with actions.
func commitBody(branch string, actions ...map[string]any) map[string]any {
	return map[string]any{"branch": branch, "commit_message": "api commit", "actions": actions}
}

// modes is ls-tree -r of rev on s: "mode path" lines.
func modes(s *forgeapi.Server, rev string) string {
	return s.Git("ls-tree", "-r", "--format=%(objectmode) %(path)", rev)
}

// TestGitLabActions: each action writes the tree GitLab's does (update and move keep
// the mode, chmod sets it, create writes a regular file), on the branch's head,
// unsigned, by the token's user or the author given.
func TestGitLabActions(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitLab(t, forgeapi.Options{})
	w := clone(t, s)
	w.commitAll("files", map[string]string{"bin/run": "#!/bin/sh\n", "docs/a.md": "a\n"}, nil)
	w.run("push", "-q", "origin", "HEAD:main")
	gl := gitlab(t, s, "PRIVATE-TOKEN", forgeapi.GitLabToken)
	steps := []struct {
		actions []map[string]any
		tree    string
	}{
		{[]map[string]any{action("create", "new.txt", "content", "new\n"),
			action("create", "bin.dat", "content", base64.StdEncoding.EncodeToString([]byte("\x00\x01")), "encoding", "base64")},
			"100644 README.md\n100644 bin.dat\n100755 bin/run\n100644 docs/a.md\n100644 new.txt"},
		{[]map[string]any{action("update", "bin/run", "content", "#!/bin/sh\necho v2\n"), action("update", "docs/a.md", "content", "a2\n")},
			"100644 README.md\n100644 bin.dat\n100755 bin/run\n100644 docs/a.md\n100644 new.txt"},
		{[]map[string]any{action("chmod", "docs/a.md", "execute_filemode", true), action("chmod", "bin/run", "execute_filemode", false)},
			"100644 README.md\n100644 bin.dat\n100644 bin/run\n100755 docs/a.md\n100644 new.txt"},
		{[]map[string]any{action("move", "docs/b.md", "previous_path", "docs/a.md"), action("delete", "new.txt")},
			"100644 README.md\n100644 bin.dat\n100644 bin/run\n100755 docs/b.md"},
	}
	for i, st := range steps {
		head := s.Head("main")
		r := gl.do("POST", commitsPath, commitBody("main", st.actions...))
		if r.status != 201 || r.str("id") != s.Head("main") || r.str("parent_ids", 0) != head || r.str("author_name") != "GitLab User" {
			t.Fatalf("step %d: %d %s", i, r.status, r.body)
		}
		if got := modes(s, "main"); got != st.tree {
			t.Errorf("step %d: tree\n%s\nwant\n%s", i, got, st.tree)
		}
	}
	if got := s.Git("show", "main:docs/b.md"); got != "a2" {
		t.Errorf("the moved file holds %q", got)
	}
	if got := s.Git("show", "main:bin.dat"); got != "\x00\x01" {
		t.Errorf("the base64 file holds %q", got)
	}
	body := commitBody("main", action("create", "by.txt"))
	body["author_name"], body["author_email"] = "Job", "job@example.invalid"
	gl.do("POST", commitsPath, body)
	if got := s.Git("log", "-1", "--format=%an <%ae> / %cn <%ce> / %G?", "main"); got != "Job <job@example.invalid> / GitLab User <gitlab-user@example.invalid> / N" {
		t.Errorf("author / committer / signature: %s", got)
	}
}

// TestGitLabRefusals: what the commits and branches API refuse, in GitLab's words
// (its "message", or its parameter validation's "error"); main never moves.
func TestGitLabRefusals(t *testing.T) {
	t.Parallel()
	tokens := forgeapi.DefaultTokens()
	tokens["glpat-read"] = forgeapi.Token{Login: "reader", ReadOnly: true}
	s := forgeapi.StartGitLab(t, forgeapi.Options{Tokens: tokens, Rules: []forgeapi.Rule{{Branch: "protected", Kind: forgeapi.RequirePullRequest}}})
	head := s.Head("main")
	s.Git("update-ref", "refs/heads/protected", head)
	newer := s.Git("commit-tree", "-p", head, "-m", "not on any branch", head+"^{tree}")
	body := func(kv ...any) map[string]any {
		b := commitBody("main", action("update", "README.md", "content", "x"))
		for i := 0; i+1 < len(kv); i += 2 {
			b[kv[i].(string)] = kv[i+1]
		}
		return b
	}
	cases := []struct {
		name, header, token, method, path string
		body                              any
		status                            int
		message, err                      string
	}{
		{"create an existing file", "PRIVATE-TOKEN", forgeapi.GitLabToken, "POST", commitsPath, commitBody("main", action("create", "README.md")), 400, "A file with this name already exists", ""},
		{"update a missing file", "PRIVATE-TOKEN", forgeapi.GitLabToken, "POST", commitsPath, commitBody("main", action("update", "nope", "content", "x")), 400, "A file with this name doesn't exist", ""},
		{"delete a missing file", "PRIVATE-TOKEN", forgeapi.GitLabToken, "POST", commitsPath, commitBody("main", action("delete", "nope")), 400, "A file with this name doesn't exist", ""},
		{"chmod a missing file", "PRIVATE-TOKEN", forgeapi.GitLabToken, "POST", commitsPath, commitBody("main", action("chmod", "nope", "execute_filemode", true)), 400, "A file with this name doesn't exist", ""},
		{"move onto a file", "PRIVATE-TOKEN", forgeapi.GitLabToken, "POST", commitsPath, commitBody("main", action("create", "b"), action("move", "b", "previous_path", "README.md")), 400, "A file with this name already exists", ""},
		{"move from nowhere", "PRIVATE-TOKEN", forgeapi.GitLabToken, "POST", commitsPath, commitBody("main", action("move", "b")), 400, "You must supply the original file path when moving file `b`.", ""},
		{"stale last_commit_id", "PRIVATE-TOKEN", forgeapi.GitLabToken, "POST", commitsPath,
			commitBody("main", action("update", "README.md", "content", "x", "last_commit_id", newer)), 400, "The file has changed since you started editing it: README.md", ""},
		{"unknown action", "PRIVATE-TOKEN", forgeapi.GitLabToken, "POST", commitsPath, commitBody("main", action("rename", "x")), 400, "", "actions[0][action] does not have a valid value"},
		{"no branch", "PRIVATE-TOKEN", forgeapi.GitLabToken, "POST", commitsPath, body("branch", ""), 400, "", "branch is missing"},
		{"a branch that does not exist", "PRIVATE-TOKEN", forgeapi.GitLabToken, "POST", commitsPath, body("branch", "new"), 400, "You can only create or edit files when you are on a branch", ""},
		{"a start branch that does not exist", "PRIVATE-TOKEN", forgeapi.GitLabToken, "POST", commitsPath, body("branch", "new", "start_branch", "nope"), 400, "Invalid reference name: nope", ""},
		{"protected branch", "PRIVATE-TOKEN", forgeapi.GitLabToken, "POST", commitsPath, body("branch", "protected"), 403, "You are not allowed to push into this branch", ""},
		{"no token", "PRIVATE-TOKEN", "", "POST", commitsPath, body(), 401, "401 Unauthorized", ""},
		{"unknown token", "PRIVATE-TOKEN", "glpat-nobody", "POST", commitsPath, body(), 401, "401 Unauthorized", ""},
		{"a job token as a private token", "PRIVATE-TOKEN", forgeapi.JobToken, "POST", commitsPath, body(), 401, "401 Unauthorized", ""},
		{"a private token as a job token", "JOB-TOKEN", forgeapi.GitLabToken, "POST", commitsPath, body(), 401, "401 Unauthorized", ""},
		{"read-only token", "PRIVATE-TOKEN", "glpat-read", "POST", commitsPath, body(), 403, "403 Forbidden", ""},
		{"another project", "PRIVATE-TOKEN", forgeapi.GitLabToken, "GET", "/projects/2/repository/branches/main", nil, 404, "404 Project Not Found", ""},
		{"a branch that is not there", "PRIVATE-TOKEN", forgeapi.GitLabToken, "GET", "/projects/1/repository/branches/nope", nil, 404, "404 Branch Not Found", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := gitlab(t, s, c.header, c.token).do(c.method, c.path, c.body)
			if r.status != c.status || r.str("message") != c.message || r.str("error") != c.err {
				t.Errorf("%d %s\nwant %d, message %q, error %q", r.status, r.body, c.status, c.message, c.err)
			}
		})
	}
	if s.Head("main") != head || s.Head("protected") != head {
		t.Errorf("a refused commit moved a branch: main %s, protected %s", s.Head("main"), s.Head("protected"))
	}
}

// TestGitLabAccess: the project by its id or its URL-encoded path, each way of
// giving a token, and a new branch made from start_branch.
func TestGitLabAccess(t *testing.T) {
	t.Parallel()
	tokens := forgeapi.DefaultTokens()
	tokens["glpat-read"] = forgeapi.Token{Login: "reader", ReadOnly: true}
	s := forgeapi.StartGitLab(t, forgeapi.Options{Tokens: tokens})
	head := s.Head("main")
	for _, c := range []struct{ header, token, path string }{
		{"PRIVATE-TOKEN", forgeapi.GitLabToken, "/projects/1/repository/branches/main"},
		{"JOB-TOKEN", forgeapi.JobToken, "/projects/acme%2Fwidgets/repository/branches/main"},
		{"Authorization", "Bearer " + forgeapi.GitLabToken, "/projects/acme%2Fwidgets/repository/branches/main"},
		{"PRIVATE-TOKEN", "glpat-read", "/projects/1/repository/branches/main"},
	} {
		r := gitlab(t, s, c.header, c.token).do("GET", c.path, nil)
		if r.status != 200 || r.str("commit", "id") != head || r.str("name") != "main" || r.get("default") != true {
			t.Errorf("%s %s: %d %s", c.header, c.path, r.status, r.body)
		}
	}
	body := commitBody("feature", action("create", "f.txt", "content", "f\n"))
	body["start_branch"] = "main"
	r := gitlab(t, s, "JOB-TOKEN", forgeapi.JobToken).do("POST", "/projects/acme%2Fwidgets/repository/commits", body)
	if r.status != 201 || s.Head("feature") != r.str("id") || r.str("parent_ids", 0) != head || s.Head("main") != head {
		t.Errorf("a new branch from main: %d %s; feature at %s", r.status, r.body, s.Head("feature"))
	}
}

// TestGitLabNoCompareAndSwap: GitLab has no compare-and-swap on the branch. A commit
// whose branch moved after the client read it lands on the new head (parent_ids
// says so) and keeps the other writer's change; only last_commit_id, per file,
// refuses a change to a file that changed meanwhile.
func TestGitLabNoCompareAndSwap(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitLab(t, forgeapi.Options{Faults: map[int]forgeapi.Fault{2: forgeapi.LandFirst("main")}})
	gl := gitlab(t, s, "PRIVATE-TOKEN", forgeapi.GitLabToken)
	seen := gl.do("GET", "/projects/1/repository/branches/main", nil).str("commit", "id")
	r := gl.do("POST", commitsPath, commitBody("main", action("create", "job.txt", "content", "job\n")))
	landed := s.Git("rev-parse", "main^")
	if r.status != 201 || r.str("parent_ids", 0) != landed || landed == seen || s.Git("rev-parse", landed+"^") != seen {
		t.Fatalf("%d %s\nthe client saw %s, another writer landed %s", r.status, r.body, seen, landed)
	}
	if got := modes(s, "main"); got != "100644 README.md\n100644 job.txt\n100644 landed/request-2.txt" {
		t.Errorf("tree:\n%s", got)
	}
	if _, err := s.Land("main", "README.md", "changed by someone else\n"); err != nil {
		t.Fatal(err)
	}
	update := func(path, last string) reply {
		return gl.do("POST", commitsPath, commitBody("main", action("update", path, "content", "mine\n", "last_commit_id", last)))
	}
	update("README.md", seen).want(t, 400, "The file has changed since you started editing it: README.md")
	if r := update("job.txt", r.str("id")); r.status != 201 {
		t.Errorf("an update of a file nobody else changed: %d %s", r.status, r.body)
	}
}

// TestGitLabConcurrent: concurrent commits of different files all land, one after
// another; concurrent updates of one file from the same last_commit_id: exactly one
// lands, the others are refused.
func TestGitLabConcurrent(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitLab(t, forgeapi.Options{})
	initial := s.Head("main")
	n := testutil.Scale(t, 4, 16)
	gl := gitlab(t, s, "PRIVATE-TOKEN", forgeapi.GitLabToken)
	send := func(body func(i int) map[string]any) func(int) reply {
		return func(i int) reply { return gl.do("POST", commitsPath, body(i)) }
	}
	for i, r := range race(n, send(func(i int) map[string]any {
		return commitBody("main", action("create", fmt.Sprintf("job-%d.txt", i), "content", "done\n"))
	})) {
		if r.status != 201 {
			t.Errorf("create %d: %d %s", i, r.status, r.body)
		}
	}
	if got := s.Git("rev-list", "--count", "--first-parent", "main"); got != fmt.Sprint(n+1) {
		t.Errorf("main has %s commits, want %d", got, n+1)
	}
	landed := 0
	for i, r := range race(n, send(func(i int) map[string]any {
		return commitBody("main", action("update", "README.md", "content", fmt.Sprintf("job %d\n", i), "last_commit_id", initial))
	})) {
		switch {
		case r.status == 201:
			landed++
		case r.status != 400 || r.str("message") != "The file has changed since you started editing it: README.md":
			t.Errorf("update %d: %d %s", i, r.status, r.body)
		}
	}
	if landed != 1 {
		t.Errorf("%d of %d updates of one file landed", landed, n)
	}
}

// TestGitLabFile: GET and HEAD of a file name the last commit that changed it as of
// ref (a branch or a commit), in the body and in X-Gitlab-Last-Commit-Id; a missing
// file is 404.
func TestGitLabFile(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitLab(t, forgeapi.Options{})
	initial := s.Head("main")
	if _, err := s.Land("main", "other.txt", "x\n"); err != nil {
		t.Fatal(err)
	}
	gl := gitlab(t, s, "PRIVATE-TOKEN", forgeapi.GitLabToken)
	for _, method := range []string{"GET", "HEAD"} {
		r := gl.do(method, "/projects/1/repository/files/README.md?ref=main", nil)
		if r.status != 200 || r.header.Get("X-Gitlab-Last-Commit-Id") != initial {
			t.Errorf("%s README.md: %d %v %s, want last commit %s", method, r.status, r.header, r.body, initial)
		}
	}
	if r := gl.do("GET", "/projects/acme%2Fwidgets/repository/files/dir%2Fnone.txt?ref="+initial, nil); r.status != 404 {
		t.Errorf("a missing file: %d %s", r.status, r.body)
	}
	if n := s.Count(forgeapi.GitLabGetFile); n != 3 {
		t.Errorf("%d requests counted as %s, want 3", n, forgeapi.GitLabGetFile)
	}
}
