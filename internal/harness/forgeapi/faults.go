package forgeapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Fault is what the server does with one API request instead of (or before)
// answering it. The constructors below make the forges' shapes.
type Fault struct {
	// Land, when not empty, lands another writer's commit on that branch before the
	// request is handled (Server.Land): a race lost between two requests.
	Land string
	// Status, when not zero, is answered with Header and Body instead of the
	// request's own answer. Zero serves the request (after Land).
	Status int
	Header http.Header
	Body   string
	// Apply serves the request first, so that it takes effect, and loses its answer:
	// the client sees only Status (an outcome it cannot know).
	Apply bool
}

// LandFirst is a race: another writer's commit lands on branch, then the request is
// served as usual.
func LandFirst(branch string) Fault { return Fault{Land: branch} }

// jsonFault is a fault answering status with v as JSON and the headers kv (name,
// value, ...).
func jsonFault(status int, v any, kv ...string) Fault {
	b, _ := json.Marshal(v)
	h := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return Fault{Status: status, Header: h, Body: string(b) + "\n"}
}

// ServerError is a 5xx from the forge's front end: status and a JSON message.
func ServerError(status int) Fault {
	return jsonFault(status, map[string]string{"message": http.StatusText(status)})
}

const secondaryLimitMessage = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."

// GitHubSecondaryLimit is GitHub's secondary rate limit (403 or 429) with
// Retry-After: seconds (transcribed from documentation).
func GitHubSecondaryLimit(status, retryAfter int) Fault {
	return jsonFault(status, githubErrorBody(status, secondaryLimitMessage, "/using-the-rest-api/rate-limits-for-the-rest-api"),
		"Retry-After", strconv.Itoa(retryAfter))
}

// GitHubRateLimitReset is GitHub's rate limit (403 or 429) that gives no
// Retry-After, only x-ratelimit-remaining: 0 and x-ratelimit-reset: the reset's
// unix time (transcribed from documentation).
func GitHubRateLimitReset(status int, reset time.Time) Fault {
	return jsonFault(status, githubErrorBody(status, "API rate limit exceeded for installation ID 1.", "/using-the-rest-api/rate-limits-for-the-rest-api"),
		"x-ratelimit-limit", "5000", "x-ratelimit-remaining", "0", "x-ratelimit-used", "5000",
		"x-ratelimit-reset", strconv.FormatInt(reset.Unix(), 10), "x-ratelimit-resource", "core")
}

// GitHubAbuse is the older REST secondary limit: 403 with "code": "abuse" and no
// Retry-After (transcribed from reports, not captured).
func GitHubAbuse() Fault {
	return jsonFault(http.StatusForbidden, map[string]string{
		"message":           "You have triggered an abuse detection mechanism. Please wait a few minutes before you try again.",
		"code":              "abuse",
		"documentation_url": docsURL + "/using-the-rest-api/rate-limits-for-the-rest-api",
	})
}

// GitHubBadCredentials is GitHub's 401 for a token it does not know (or no longer
// does).
func GitHubBadCredentials() Fault {
	return jsonFault(http.StatusUnauthorized, githubErrorBody(http.StatusUnauthorized, "Bad credentials", ""))
}

// GitHubNotAccessible is GitHub's 403 for an App token without the permission.
func GitHubNotAccessible() Fault {
	return jsonFault(http.StatusForbidden, githubErrorBody(http.StatusForbidden, "Resource not accessible by integration", ""))
}

// GitHubRuleViolation is GitHub's 422 for a ref update a ruleset refuses, naming
// rule (e.g. "Commits must have verified signatures.").
func GitHubRuleViolation(rule string) Fault {
	return jsonFault(http.StatusUnprocessableEntity, githubErrorBody(http.StatusUnprocessableEntity,
		ruleViolation(rule), "/git/refs#update-a-reference"))
}

// ruleViolation is the message of a ruleset refusal (transcribed from reports).
func ruleViolation(rule string) string { return "Repository rule violations found\n\n" + rule + "\n\n" }

// GraphQLError is GitHub's GraphQL failure: HTTP 200 with errors of type typ (e.g.
// "RATE_LIMITED", "FORBIDDEN") and no data.
func GraphQLError(typ, message string) Fault {
	return jsonFault(http.StatusOK, map[string]any{"data": nil, "errors": []map[string]any{{"type": typ, "message": message}}})
}

// GraphQLRateLimited is GitHub's GraphQL rate limit: HTTP 200 with an error of type
// RATE_LIMITED, x-ratelimit-remaining: 0 and x-ratelimit-reset.
func GraphQLRateLimited(reset time.Time) Fault {
	f := GraphQLError("RATE_LIMITED", "API rate limit exceeded for installation ID 1.")
	f.Header.Set("x-ratelimit-remaining", "0")
	f.Header.Set("x-ratelimit-reset", strconv.FormatInt(reset.Unix(), 10))
	f.Header.Set("x-ratelimit-resource", "graphql")
	return f
}

// GitLabRateLimit is GitLab's throttle: 429, "Retry later", Retry-After (seconds)
// and the RateLimit-* headers (transcribed from documentation).
func GitLabRateLimit(retryAfter int, reset time.Time) Fault {
	h := http.Header{"Content-Type": {"text/plain"}}
	h.Set("Retry-After", strconv.Itoa(retryAfter))
	h.Set("RateLimit-Name", "throttle_authenticated_api")
	h.Set("RateLimit-Limit", "60")
	h.Set("RateLimit-Observed", "61")
	h.Set("RateLimit-Remaining", "0")
	h.Set("RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	h.Set("RateLimit-ResetTime", reset.UTC().Format(http.TimeFormat))
	return Fault{Status: http.StatusTooManyRequests, Header: h, Body: "Retry later\n"}
}

// GitLabUnauthorized is GitLab's 401.
func GitLabUnauthorized() Fault {
	return jsonFault(http.StatusUnauthorized, map[string]string{"message": "401 Unauthorized"})
}

// GitLabForbidden is GitLab's 403.
func GitLabForbidden() Fault {
	return jsonFault(http.StatusForbidden, map[string]string{"message": "403 Forbidden"})
}
