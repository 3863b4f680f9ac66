// Package apicommit makes commits on a branch through a forge's API instead of git
// push: GitHub's git data API (or GraphQL's createCommitOnBranch), Gitea's contents
// API, GitLab's commits API. It is what `refretry push --api` (package forge) and a
// gather's wave with an API (package gather) send; they own the attempts, the
// replays and the budget.
//
//   - Resolve finds the forge, its API, the repository and the token from what the
//     caller said, the CI's environment and the remote's URL (endpoint.go). The token
//     goes in the request's header and nowhere else: no error, note or log carries it.
//   - Endpoint.Plan checks a landing (local commits on the branch's value on the
//     remote) against the route its forge takes, and refuses what that route cannot
//     write before anything is sent: a symbolic link, a submodule or an executable bit
//     through a file-level API (change.go), a path Git LFS would take on Gitea.
//   - Plan.Land sends it, one file per forge (github.go, gitea.go, gitlab.go), and
//     classifies every answer other than the one expected into a *failure.Error in
//     the forge's words: a lost race (behind, for a replay onto the new head: GitHub's
//     422 "Update is not a fast forward" and GraphQL's HTTP 200 with STALE_DATA,
//     Gitea's 403 "cannot lock ref" and its unmapped 500, Gitea's and GitLab's
//     per-file refusals), a limit (transport, with the wait Retry-After or x-ratelimit-reset
//     asks for), a rule (declined, its lines as Policy), credentials (auth), anything
//     else rejected or other. A 5xx is an unknown outcome: the caller looks at the
//     branch.
//
// Only net/http and encoding/json: each forge's client is a few requests.
package apicommit
