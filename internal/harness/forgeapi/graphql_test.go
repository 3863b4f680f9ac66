package forgeapi_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/forgeapi"
	"github.com/refretry/refretry/internal/harness/testutil"
)

const commitOnBranch = `mutation Commit($input: CreateCommitOnBranchInput!) {
  createCommitOnBranch(input: $input) {
    clientMutationId
    commit { oid signature { isValid state } }
    ref { name target { oid } }
  }
}`

// input is createCommitOnBranch's input for acme/widgets: additions (path to content)
// and deletions on branch, expected at head.
func input(branch, head string, additions map[string]string, deletions ...string) map[string]any {
	var adds, dels []map[string]string
	for path, content := range additions {
		adds = append(adds, map[string]string{"path": path, "contents": base64.StdEncoding.EncodeToString([]byte(content))})
	}
	for _, path := range deletions {
		dels = append(dels, map[string]string{"path": path})
	}
	return map[string]any{"input": map[string]any{
		"branch":          map[string]string{"repositoryNameWithOwner": "acme/widgets", "branchName": branch},
		"expectedHeadOid": head,
		"message":         map[string]string{"headline": "api commit", "body": "made through GraphQL"},
		"fileChanges":     map[string]any{"additions": adds, "deletions": dels},
	}}
}

// TestCreateCommitOnBranch: the mutation makes a signed commit on the expected head
// with its additions and deletions, and writes what GitHub's does: every addition a
// regular file, so an executable loses its bit and a symbolic link becomes a file
// holding the link's target.
func TestCreateCommitOnBranch(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	w := clone(t, s)
	w.commitAll("modes", map[string]string{"bin/run": "#!/bin/sh\n", "gone.txt": "gone\n"}, map[string]string{"link": "bin/run"})
	w.run("push", "-q", "origin", "HEAD:main")
	head := s.Head("main")
	in := input("main", head, map[string]string{"bin/run": "#!/bin/sh\necho changed\n", "link": "bin/run", "new/dir/file.txt": "new\n"}, "gone.txt")
	in["input"].(map[string]any)["clientMutationId"] = "job-1"
	r := github(t, s, forgeapi.UserToken).graphql(commitOnBranch, in)
	oid := r.str("data", "createCommitOnBranch", "commit", "oid")
	if r.status != 200 || r.get("errors") != nil || oid == "" || oid != s.Head("main") ||
		r.get("data", "createCommitOnBranch", "commit", "signature", "isValid") != true ||
		r.str("data", "createCommitOnBranch", "ref", "target", "oid") != oid ||
		r.str("data", "createCommitOnBranch", "clientMutationId") != "job-1" {
		t.Fatalf("%d %s\nmain is at %s", r.status, r.body, s.Head("main"))
	}
	w.run("fetch", "-q", "origin")
	want := "100644 blob README.md\n100644 blob bin/run\n100644 blob link\n100644 blob new/dir/file.txt"
	if got := w.run("ls-tree", "-r", "--format=%(objectmode) %(objecttype) %(path)", "origin/main"); got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	if got := w.run("show", "origin/main:link"); got != "bin/run" {
		t.Errorf("link holds %q", got)
	}
	want = head + "\napi commit\n\nmade through GraphQL\nMona Octocat <octocat@example.invalid> / GitHub <noreply@github.com>"
	if got := w.run("log", "-1", "--format=%P%n%B%an <%ae> / %cn <%ce>", "origin/main"); got != want {
		t.Errorf("commit:\n%s\nwant:\n%s", got, want)
	}
	if err := w.verify(s, oid); err != nil {
		t.Error(err)
	}
}

// TestCreateCommitOnBranchStale: a mutation that expects a head the branch has left
// is answered exactly as GitHub answers it (transcribed): HTTP 200, data null, one
// STALE_DATA error with its path, location and words. The branch does not move.
func TestCreateCommitOnBranchStale(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	old := s.Head("main")
	if _, err := s.Land("main", "other.txt", "other\n"); err != nil {
		t.Fatal(err)
	}
	moved := s.Head("main")
	q := `mutation($input: CreateCommitOnBranchInput!) { createCommitOnBranch(input: $input) { commit { oid } } }`
	r := github(t, s, forgeapi.AppToken).graphql(q, input("main", old, map[string]string{"f": "x"}))
	want := fmt.Sprintf(`{"data":{"createCommitOnBranch":null},"errors":[{"type":"STALE_DATA","path":["createCommitOnBranch"],`+
		`"locations":[{"line":1,"column":%d}],"message":"Expected branch to point to \"%s\" but it did not.  Pull and try again."}]}`,
		strings.Index(q, "createCommitOnBranch")+1, old)
	var got, wantJSON any
	json.Unmarshal([]byte(r.body), &got)
	json.Unmarshal([]byte(want), &wantJSON)
	if r.status != 200 || !reflect.DeepEqual(got, wantJSON) {
		t.Errorf("%d %s\nwant 200 %s", r.status, r.body, want)
	}
	if s.Head("main") != moved {
		t.Errorf("main moved to %s", s.Head("main"))
	}
}

// TestCreateCommitOnBranchRefusals: what the mutation refuses, each with GitHub's
// error type and words; the branch never moves.
func TestCreateCommitOnBranchRefusals(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitHub(t, forgeapi.Options{Rules: []forgeapi.Rule{{Branch: "reviewed", Kind: forgeapi.RequirePullRequest}}})
	head := s.Head("main")
	s.Git("update-ref", "refs/heads/reviewed", head)
	other := input("main", head, map[string]string{"f": "x"})
	other["input"].(map[string]any)["branch"] = map[string]string{"repositoryNameWithOwner": "acme/other", "branchName": "main"}
	noHead := input("main", head, nil)
	delete(noHead["input"].(map[string]any), "expectedHeadOid")
	badBase64 := input("main", head, nil)
	badBase64["input"].(map[string]any)["fileChanges"] = map[string]any{"additions": []map[string]string{{"path": "f", "contents": "!!"}}}
	cases := []struct {
		name, token string
		vars        map[string]any
		typ, msg    string
	}{
		{"missing branch", forgeapi.AppToken, input("nowhere", head, map[string]string{"f": "x"}), "NOT_FOUND", `A ref named "refs/heads/nowhere" does not exist.`},
		{"another repository", forgeapi.AppToken, other, "NOT_FOUND", "Could not resolve to a Repository with the name 'acme/other'."},
		{"read-only token", forgeapi.ReadOnlyToken, input("main", head, map[string]string{"f": "x"}), "FORBIDDEN", "Resource not accessible by integration"},
		{"pull requests only", forgeapi.AppToken, input("reviewed", head, map[string]string{"f": "x"}), "UNPROCESSABLE",
			"Repository rule violations found\n\nChanges must be made through a pull request.\n\n"},
		{"no expected head", forgeapi.AppToken, noHead, "",
			"Variable $input of type CreateCommitOnBranchInput! was provided invalid value for expectedHeadOid (Expected value to not be null)"},
		{"deleting what is not there", forgeapi.AppToken, input("main", head, nil, "nothing.txt"), "UNPROCESSABLE",
			"A path was requested for deletion which does not exist as of commit oid `" + head + "`"},
		{"contents not base64", forgeapi.AppToken, badBase64, "UNPROCESSABLE", `contents of "f" is not Base64`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := github(t, s, c.token).graphql(commitOnBranch, c.vars)
			if r.status != 200 || r.get("data", "createCommitOnBranch") != nil || r.str("errors", 0, "type") != c.typ || r.str("errors", 0, "message") != c.msg {
				t.Errorf("%d %s\nwant 200, an error of type %q: %q", r.status, r.body, c.typ, c.msg)
			}
		})
	}
	github(t, s, "").graphql(commitOnBranch, input("main", head, nil)).want(t, 401, "This endpoint requires you to be authenticated.")
	github(t, s, "ghs_nobody").graphql(commitOnBranch, input("main", head, nil)).want(t, 401, "Bad credentials")
	if s.Head("main") != head || s.Head("reviewed") != head {
		t.Errorf("a refused mutation moved a branch: main %s, reviewed %s", s.Head("main"), s.Head("reviewed"))
	}
}

// TestGraphQLQuery: a query of the repository's refs and their commits, with
// variables, aliases, an inline fragment and __typename, answers from the
// repository; what it cannot answer comes back in errors, GitHub's way.
func TestGraphQLQuery(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	head, tree := tip(s, "main")
	gh := github(t, s, forgeapi.AppToken)
	q := `query Heads($owner: String!, $name: String = "widgets") {
  viewer { login }
  repository(owner: $owner, name: $name) {
    nameWithOwner
    main: ref(qualifiedName: "refs/heads/main") {
      name prefix
      target { __typename oid ... on Commit { messageHeadline tree { oid } parents(first: 5) { totalCount nodes { oid } } signature { isValid } } }
    }
    short: ref(qualifiedName: "main") { target { oid } }
    missing: ref(qualifiedName: "nowhere") { name }
    defaultBranchRef { name }
  }
}`
	r := gh.graphql(q, map[string]any{"owner": "acme"})
	checks := map[string][2]any{
		"login":     {r.get("data", "viewer", "login"), "github-actions[bot]"},
		"name":      {r.get("data", "repository", "nameWithOwner"), "acme/widgets"},
		"ref name":  {r.get("data", "repository", "main", "name"), "main"},
		"prefix":    {r.get("data", "repository", "main", "prefix"), "refs/heads/"},
		"typename":  {r.get("data", "repository", "main", "target", "__typename"), "Commit"},
		"oid":       {r.get("data", "repository", "main", "target", "oid"), head},
		"headline":  {r.get("data", "repository", "main", "target", "messageHeadline"), "Initial commit"},
		"tree":      {r.get("data", "repository", "main", "target", "tree", "oid"), tree},
		"parents":   {r.get("data", "repository", "main", "target", "parents", "totalCount"), 0.0},
		"signature": {r.get("data", "repository", "main", "target", "signature"), nil},
		"short":     {r.get("data", "repository", "short", "target", "oid"), head},
		"missing":   {r.get("data", "repository", "missing"), nil},
		"default":   {r.get("data", "repository", "defaultBranchRef", "name"), "main"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s: %v, want %v", name, c[0], c[1])
		}
	}
	if r.get("errors") != nil {
		t.Errorf("errors: %s", r.body)
	}
	for q, want := range map[string]string{
		`{ repository(owner: "acme", name: "widgets") { bogus } }`:            "Field 'bogus' doesn't exist on type 'Repository'",
		`{ repository(owner: "acme", name: "other") { nameWithOwner } }`:      "Could not resolve to a Repository with the name 'acme/other'.",
		`{ repository(owner: "acme", name: "widgets") { ...Named } }`:         "Parse error at [1, 51]: named fragments are not read here",
		`{ repository(owner: "acme", name: "widgets") { nameWithOwner }`:      `Parse error at [1, 63]: expected a name, found ""`,
		`query A { viewer { login } } query B { viewer { login } }`:           `No operation named ""`,
		`{ repository(owner: "acme", name: "widgets") { defaultBranchRef } }`: "Field must have selections (field 'defaultBranchRef' returns Ref but has no selections)",
	} {
		if r := gh.graphql(q, nil); r.status != 200 || r.str("errors", 0, "message") != want {
			t.Errorf("%s\n%d %s\nwant the error %q", q, r.status, r.body, want)
		}
	}
}

// TestGraphQLRace: mutations racing on one expected head: exactly one lands, every
// other gets STALE_DATA.
func TestGraphQLRace(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	head := s.Head("main")
	n := testutil.Scale(t, 6, 24)
	replies := race(n, func(i int) reply {
		return github(t, s, forgeapi.AppToken).graphql(commitOnBranch, input("main", head, map[string]string{fmt.Sprintf("job-%d.txt", i): "done\n"}))
	})
	var won []string
	for i, r := range replies {
		if oid := r.str("data", "createCommitOnBranch", "commit", "oid"); oid != "" {
			won = append(won, oid)
		} else if r.str("errors", 0, "type") != "STALE_DATA" {
			t.Errorf("mutation %d: %d %s", i, r.status, r.body)
		}
	}
	if len(won) != 1 || s.Head("main") != won[0] || s.Git("rev-parse", won[0]+"^") != head {
		t.Errorf("%d of %d mutations landed (%v); main is at %s", len(won), n, won, s.Head("main"))
	}
}

// TestGraphQLFaults: GraphQL's rate limit is an HTTP 200 with RATE_LIMITED and the
// reset in headers; a commit landed before a mutation makes it STALE_DATA.
func TestGraphQLFaults(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	s := forgeapi.StartGitHub(t, forgeapi.Options{Faults: map[int]forgeapi.Fault{
		1: forgeapi.GraphQLRateLimited(reset), 2: forgeapi.LandFirst("main"),
	}})
	gh := github(t, s, forgeapi.AppToken)
	head := s.Head("main")
	r := gh.graphql(commitOnBranch, input("main", head, map[string]string{"f": "x"}))
	if r.status != 200 || r.str("errors", 0, "type") != "RATE_LIMITED" || r.header.Get("x-ratelimit-remaining") != "0" ||
		r.header.Get("x-ratelimit-reset") != fmt.Sprint(reset.Unix()) {
		t.Errorf("rate limited: %d %v %s", r.status, r.header, r.body)
	}
	if r := gh.graphql(commitOnBranch, input("main", head, map[string]string{"f": "x"})); r.str("errors", 0, "type") != "STALE_DATA" {
		t.Errorf("after a commit landed: %d %s", r.status, r.body)
	}
	if s.Count(forgeapi.GitHubCommitOnBranch) != 2 || s.Head("main") == head {
		t.Errorf("%d mutations counted; main at %s", s.Count(forgeapi.GitHubCommitOnBranch), s.Head("main"))
	}
}
