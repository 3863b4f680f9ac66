package forgeapi_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/forgeapi"
)

// faultCase is a fault and what its answer must hold.
type faultCase struct {
	name    string
	fault   forgeapi.Fault
	status  int
	header  map[string]string // "" for a header that must be absent
	message string            // the JSON message, or the whole body for a text answer
	code    string            // the JSON "code"
}

// TestFaultsByNumber: each fault answers the request of its number in its forge's
// shape (status, headers, message), and the requests around it are served as usual.
func TestFaultsByNumber(t *testing.T) {
	t.Parallel()
	reset := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	unix := strconv.FormatInt(reset.Unix(), 10)
	secondary := "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
	ghCases := []faultCase{
		{"secondary limit, 403", forgeapi.GitHubSecondaryLimit(403, 60), 403, map[string]string{"Retry-After": "60"}, secondary, ""},
		{"secondary limit, 429", forgeapi.GitHubSecondaryLimit(429, 1), 429, map[string]string{"Retry-After": "1"}, secondary, ""},
		{"limit with a reset", forgeapi.GitHubRateLimitReset(403, reset), 403,
			map[string]string{"x-ratelimit-remaining": "0", "x-ratelimit-reset": unix, "Retry-After": ""}, "API rate limit exceeded for installation ID 1.", ""},
		{"abuse", forgeapi.GitHubAbuse(), 403, map[string]string{"Retry-After": ""},
			"You have triggered an abuse detection mechanism. Please wait a few minutes before you try again.", "abuse"},
		{"bad credentials", forgeapi.GitHubBadCredentials(), 401, nil, "Bad credentials", ""},
		{"not accessible", forgeapi.GitHubNotAccessible(), 403, nil, "Resource not accessible by integration", ""},
		{"rule", forgeapi.GitHubRuleViolation("Commits must have verified signatures."), 422, nil,
			"Repository rule violations found\n\nCommits must have verified signatures.\n\n", ""},
		{"server error", forgeapi.ServerError(502), 502, nil, "Bad Gateway", ""},
	}
	glCases := []faultCase{
		{"throttled", forgeapi.GitLabRateLimit(30, reset), 429,
			map[string]string{"Retry-After": "30", "RateLimit-Remaining": "0", "RateLimit-Reset": unix}, "Retry later\n", ""},
		{"unauthorized", forgeapi.GitLabUnauthorized(), 401, nil, "401 Unauthorized", ""},
		{"forbidden", forgeapi.GitLabForbidden(), 403, nil, "403 Forbidden", ""},
		{"server error", forgeapi.ServerError(500), 500, nil, "Internal Server Error", ""},
	}
	t.Run("github", func(t *testing.T) {
		t.Parallel()
		checkFaults(t, ghCases, forgeapi.StartGitHub, func(s *forgeapi.Server) reply {
			return githubClient(t, s).do("GET", repoPath+"/ref/heads/main", nil)
		})
	})
	t.Run("gitlab", func(t *testing.T) {
		t.Parallel()
		checkFaults(t, glCases, forgeapi.StartGitLab, func(s *forgeapi.Server) reply {
			return gitlab(t, s, "PRIVATE-TOKEN", forgeapi.GitLabToken).do("GET", "/projects/1/repository/branches/main", nil)
		})
	})
}

func githubClient(t testing.TB, s *forgeapi.Server) *client { return github(t, s, forgeapi.AppToken) }

// checkFaults starts a forge whose even requests get the cases' faults in turn, and
// sends them all with send.
func checkFaults(t *testing.T, cases []faultCase, start func(testing.TB, forgeapi.Options) *forgeapi.Server, send func(*forgeapi.Server) reply) {
	faults := map[int]forgeapi.Fault{}
	for i, c := range cases {
		faults[2*i+2] = c.fault
	}
	s := start(t, forgeapi.Options{Faults: faults})
	for i, c := range cases {
		if r := send(s); r.status != 200 {
			t.Errorf("request %d, before %s: %d %s", 2*i+1, c.name, r.status, r.body)
		}
		r := send(s)
		got := r.str("message")
		if r.json == nil {
			got = r.body
		}
		if r.status != c.status || got != c.message || r.str("code") != c.code {
			t.Errorf("%s: %d %s\nwant %d, message %q, code %q", c.name, r.status, r.body, c.status, c.message, c.code)
		}
		for k, v := range c.header {
			if got := r.header.Get(k); got != v {
				t.Errorf("%s: header %s is %q, want %q", c.name, k, got, v)
			}
		}
	}
	if s.Requests() != 2*len(cases) {
		t.Errorf("Requests() = %d, want %d", s.Requests(), 2*len(cases))
	}
}

// TestFaultInject: Options.Inject picks requests by kind and number within it; the
// counters count every request, faulted ones included.
func TestFaultInject(t *testing.T) {
	t.Parallel()
	s := forgeapi.StartGitHub(t, forgeapi.Options{Inject: func(q forgeapi.Request) *forgeapi.Fault {
		if q.Kind == forgeapi.GitHubUpdateRef && q.KindN == 1 {
			f := forgeapi.GitHubSecondaryLimit(429, 2)
			return &f
		}
		return nil
	}})
	gh := githubClient(t, s)
	head, tree := tip(s, "main")
	c := gh.commit("m\n", tree, head)
	first := gh.do("PATCH", repoPath+"/refs/heads/main", map[string]string{"sha": c.str("sha")})
	if first.status != 429 || first.header.Get("Retry-After") != "2" || s.Head("main") != head {
		t.Errorf("first update: %d %v %s; main at %s", first.status, first.header, first.body, s.Head("main"))
	}
	if again := gh.do("PATCH", repoPath+"/refs/heads/main", map[string]string{"sha": c.str("sha")}); again.status != 200 {
		t.Errorf("second update: %d %s", again.status, again.body)
	}
	gh.do("GET", "/nothing/here", nil).want(t, 404, "Not Found")
	for k, want := range map[forgeapi.Kind]int{forgeapi.GitHubCreateCommit: 1, forgeapi.GitHubUpdateRef: 2, forgeapi.Unknown: 1, forgeapi.GitHubGetRef: 0} {
		if got := s.Count(k); got != want {
			t.Errorf("Count(%s) = %d, want %d", k, got, want)
		}
	}
	if s.Requests() != 4 {
		t.Errorf("Requests() = %d, want 4", s.Requests())
	}
}

// TestFaultRaceAndApply: a commit landed before the branch update makes it lose the
// race ("Update is not a fast forward"), the other writer's commit in place; an
// applied fault moves the branch and loses the answer.
func TestFaultRaceAndApply(t *testing.T) {
	t.Parallel()
	lost := forgeapi.ServerError(http.StatusBadGateway)
	lost.Apply = true
	s := forgeapi.StartGitHub(t, forgeapi.Options{Faults: map[int]forgeapi.Fault{2: forgeapi.LandFirst("main"), 4: lost}})
	gh := githubClient(t, s)
	head, tree := tip(s, "main")
	c := gh.commit("job\n", tree, head).str("sha")
	gh.do("PATCH", repoPath+"/refs/heads/main", map[string]string{"sha": c}).want(t, 422, "Update is not a fast forward")
	landed := s.Head("main")
	if landed == head || s.Git("log", "-1", "--format=%an", landed) != "Other Writer" {
		t.Fatalf("main is at %s, not another writer's commit on %s", landed, head)
	}
	c2 := gh.commit("job\n", tree, landed).str("sha")
	gh.do("PATCH", repoPath+"/refs/heads/main", map[string]string{"sha": c2}).want(t, 502, "Bad Gateway")
	if s.Head("main") != c2 {
		t.Errorf("the applied update left main at %s, want %s", s.Head("main"), c2)
	}
}
