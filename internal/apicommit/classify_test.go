package apicommit

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/harness/forgeapi"
)

// shape is one answer a forge gives, and what it must mean.
type shape struct {
	name  string
	kind  Kind // GitHub's REST, Gitea, GitLab; "graphql" for GitHub's GraphQL
	fault forgeapi.Fault
	class failure.Class
	wait  time.Duration // the wait the failure asks for
	moved bool          // the failure names the ref that moved
}

// answerJSON is an answer of status with a JSON body v.
func answerJSON(status int, v any) forgeapi.Fault {
	b, _ := json.Marshal(v)
	return forgeapi.Fault{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: string(b)}
}

// Gitea 1.26.0's answers to POST /repos/{o}/{r}/contents, captured from the instance
// internal/harness/gitea runs (2026-12-06): two of eight change-files requests from
// one head that lost the race, the first as the admin sees it. A user who is not an
// admin gets the 500 with an empty message (Gitea withholds it in production).
const (
	giteaLostPush  = `{"message":"cannot lock ref 'refs/heads/main': is at 8d7bd4d71447fabb9a090bb9961cc5550edd8425 but expected ec05fe37e4dfb887b9a897280af8ecf1154c7cbe","url":"http://127.0.0.1:46467/api/swagger"}`
	giteaOutOfDate = `{"message":"PushOutOfDate Error: exit status 1 - To /tmp/refretry-gitea-258307175/repos/refretry/r.git\n ! [rejected]        14a0ffa19696b9b30f470d5380a25fb6bcdef1f2 -\u003e main (non-fast-forward)\nerror: failed to push some refs to '/tmp/refretry-gitea-258307175/repos/refretry/r.git'\n","url":"http://127.0.0.1:32899/api/swagger"}`
)

func giteaAnswer(status int, body string) forgeapi.Fault {
	return forgeapi.Fault{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}
}

// shapes are the documented shapes of a lost race, a limit, a rule and a refusal, as
// each forge answers them, with now the time a limit's reset is read at.
func shapes(now time.Time) []shape {
	gh := func(status int, msg string) forgeapi.Fault {
		return answerJSON(status, map[string]string{"message": msg, "documentation_url": "https://docs.github.com/rest", "status": http.StatusText(status)})
	}
	gql := func(typ, msg string) forgeapi.Fault { return forgeapi.GraphQLError(typ, msg) }
	gl := func(status int, msg string) forgeapi.Fault {
		return answerJSON(status, map[string]string{"message": msg})
	}
	return []shape{
		{"not a fast forward", GitHub, gh(422, "Update is not a fast forward"), failure.Behind, 0, false},
		{"ruleset", GitHub, forgeapi.GitHubRuleViolation("Commits must have verified signatures."), failure.Declined, 0, false},
		{"protected branch", GitHub, gh(422, "Protected branch update failed for refs/heads/main."), failure.Declined, 0, false},
		{"secondary limit 403", GitHub, forgeapi.GitHubSecondaryLimit(403, 60), failure.Transport, time.Minute, false},
		{"secondary limit 429", GitHub, forgeapi.GitHubSecondaryLimit(429, 7), failure.Transport, 7 * time.Second, false},
		{"x-ratelimit-reset", GitHub, forgeapi.GitHubRateLimitReset(403, now.Add(30*time.Second)), failure.Transport, 31 * time.Second, false},
		{"abuse, no Retry-After", GitHub, forgeapi.GitHubAbuse(), failure.Transport, time.Minute, false},
		{"bad credentials", GitHub, forgeapi.GitHubBadCredentials(), failure.Auth, 0, false},
		{"no contents: write", GitHub, forgeapi.GitHubNotAccessible(), failure.Auth, 0, false},
		{"not found", GitHub, gh(404, "Not Found"), failure.NotFound, 0, false},
		{"server error", GitHub, forgeapi.ServerError(502), failure.Unknown, 0, false},
		{"validation", GitHub, gh(422, "Tree SHA does not exist"), failure.Rejected, 0, false},
		{"STALE_DATA on a 200", "graphql", gql("STALE_DATA", `Expected branch to point to "abc" but it did not.  Pull and try again.`), failure.Behind, 0, false},
		{"RATE_LIMITED on a 200", "graphql", forgeapi.GraphQLRateLimited(now.Add(10 * time.Second)), failure.Transport, 11 * time.Second, false},
		{"FORBIDDEN", "graphql", gql("FORBIDDEN", "Resource not accessible by integration"), failure.Auth, 0, false},
		{"NOT_FOUND", "graphql", gql("NOT_FOUND", "Could not resolve to a Repository with the name 'a/b'."), failure.NotFound, 0, false},
		{"GraphQL rule", "graphql", gql("UNPROCESSABLE", "Repository rule violations found\n\nChanges must be made through a pull request.\n\n"), failure.Declined, 0, false},
		{"GraphQL other", "graphql", gql("UNPROCESSABLE", "A path was requested for deletion which does not exist"), failure.Rejected, 0, false},
		{"push raced (403)", Gitea, giteaAnswer(403, giteaLostPush), failure.Behind, 0, true},
		{"out of date (500, as the admin)", Gitea, giteaAnswer(500, giteaOutOfDate), failure.Unknown, 0, false},
		{"out of date (500, withheld)", Gitea, giteaAnswer(500, `{"message":"","url":"http://127.0.0.1:3000/api/swagger"}`), failure.Unknown, 0, false},
		{"push is rejected", Gitea, gl(403, "push is rejected"), failure.Unknown, 0, false},
		{"stale sha", Gitea, gl(422, "sha does not match [given: 1111, expected: 2222]"), failure.Behind, 0, false},
		{"created meanwhile", Gitea, gl(422, "repository file already exists [path: a.txt]"), failure.Behind, 0, false},
		{"protected", Gitea, gl(403, "user cannot commit to repo [user: bot]"), failure.Declined, 0, false},
		{"archived", Gitea, gl(423, "repo is archived"), failure.Declined, 0, false},
		{"scope", Gitea, gl(403, "token does not have at least one of required scope(s), required=[write:repository]"), failure.Auth, 0, false},
		{"Gitea limit", Gitea, forgeapi.GitLabRateLimit(3, now.Add(time.Minute)), failure.Transport, 3 * time.Second, false},
		{"file changed", GitLab, gl(400, "The file has changed since you started editing it: a.txt"), failure.Behind, 0, false},
		{"exists", GitLab, gl(400, "A file with this name already exists"), failure.Behind, 0, false},
		{"gone", GitLab, gl(400, "A file with this name doesn't exist"), failure.Behind, 0, false},
		{"validation", GitLab, answerJSON(400, map[string]string{"error": "actions is missing"}), failure.Rejected, 0, false},
		{"protected branch", GitLab, gl(403, "You are not allowed to push into this branch"), failure.Declined, 0, false},
		{"forbidden", GitLab, forgeapi.GitLabForbidden(), failure.Auth, 0, false},
		{"unauthorized", GitLab, forgeapi.GitLabUnauthorized(), failure.Auth, 0, false},
		{"throttled", GitLab, forgeapi.GitLabRateLimit(30, now.Add(time.Minute)), failure.Transport, 30 * time.Second, false},
		{"server error", GitLab, forgeapi.ServerError(500), failure.Unknown, 0, false},
	}
}

// TestClassify: each documented shape is classified as docs/push.md ("API commits")
// says, with the exit code of its class.
func TestClassify(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range shapes(now) {
		t.Run(string(s.kind)+"/"+s.name, func(t *testing.T) {
			f := classifyShape(s, now)
			if f == nil || f.Class != s.class || f.Wait != s.wait || (f.Moved != nil) != s.moved {
				t.Fatalf("%d %s\nclassified %+v, want class %s, wait %v, moved %v", s.fault.Status, s.fault.Body, f, s.class, s.wait, s.moved)
			}
			if s.class == failure.Declined && len(f.Policy) == 0 {
				t.Errorf("a rule's refusal without its lines: %+v", f)
			}
			if want := map[bool]int{true: 1, false: 128}[s.class == failure.Behind || s.class == failure.Declined || s.class == failure.Rejected]; f.ExitCode != want {
				t.Errorf("exit %d, want %d", f.ExitCode, want)
			}
		})
	}
}

// classifyShape classifies the answer s's fault makes.
func classifyShape(s shape, now time.Time) *failure.Error {
	a := answer{kind: s.kind, method: "POST", path: "/x", status: s.fault.Status, header: s.fault.Header, body: []byte(s.fault.Body)}
	a.message = messageOf(a.body)
	switch s.kind {
	case GitHub:
		return classifyGitHub(a, now)
	case Gitea:
		return classifyGitea(a, now)
	case GitLab:
		return classifyGitLab(a, now)
	}
	a.kind = GitHub
	var out graphQLAnswer
	_ = json.Unmarshal(a.body, &out)
	return classifyGraphQL(a, out, now)
}
