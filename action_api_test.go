package main

import (
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/forgeapi"
)

// TestActionAPI runs the action with api: true against the fake GitHub, as a job with
// permissions contents: write does: its push lands through the API with the job's
// token (github.token, the api-token input's default), the commit is the forge's, and
// the token is in no line of the job's log. api takes true or false, forge one of
// the three forges and only with api, and api needs something to land.
func TestActionAPI(t *testing.T) {
	t.Parallel()
	a := loadAction(t)
	s := forgeapi.StartGitHub(t, forgeapi.Options{})
	je, r := newActionEnv(t, true)
	je.env, je.token = append(je.env, "GITHUB_API_URL="+s.APIURL()), forgeapi.AppToken
	r.Run("remote", "set-url", "origin", s.CloneURL())
	r.Run("fetch", "-q", "origin", "main")
	r.Run("checkout", "-q", "--detach", "FETCH_HEAD")
	r.NewCommit("result of the job")
	res := runAction(t, a, je, map[string]string{"api": "true", "push": "origin HEAD:main"})
	if res.failedAt != "" || res.outputs["result"] != "success" || res.outputs["updated-refs"] != "refs/heads/main" {
		t.Fatalf("failed at %q, outputs %v:\n%s", res.failedAt, res.outputs, res.log)
	}
	if who := s.Git("log", "-1", "--format=%cn %s", "main"); who != "GitHub result of the job" {
		t.Errorf("main's commit: %q, want the forge's", who)
	}
	if strings.Contains(res.log, forgeapi.AppToken) {
		t.Errorf("the token is in the log:\n%s", res.log)
	}
	for _, tc := range []struct {
		inputs map[string]string
		error  string
	}{
		{map[string]string{"api": "yes", "push": "origin HEAD:main"}, "::error title=refretry::api must be true or false\n"},
		{map[string]string{"api": "true", "forge": "bitbucket", "push": "origin HEAD:main"}, "::error title=refretry::forge must be github, gitea or gitlab\n"},
		{map[string]string{"forge": "github", "push": "origin HEAD:main"}, "::error title=refretry::forge goes with api: true\n"},
		{map[string]string{"api": "true"}, "::error title=refretry::api needs push, gather or gather-land: what to land through the forge's API\n"},
	} {
		if res := runAction(t, a, je, tc.inputs); res.failedAt != "setup" || res.stderr != tc.error {
			t.Errorf("%v: failed at %q, said\n%s\nwant the setup step and\n%s", tc.inputs, res.failedAt, res.stderr, tc.error)
		}
	}
}
