// Package forge lands a job's commits on a branch through the forge's API instead of
// git push (`refretry push --api`), so that the forge makes the commits: on GitHub,
// with the job's App token and no author given, GitHub signs them and shows them
// "Verified", which is how a bot meets a "require signed commits" rule without a key
// of its own. It retries as package push does, in the same engine: the same classes,
// budget and records.
//
// The contract:
//
//   - Run takes a git push's arguments as push.ReadTarget reads them: git push's
//     options (given to the staging push), <remote> and one [<src>:]<branch>. The
//     branch must exist on the remote.
//   - The forge, its API, the repository and the token come from Runner.API, else the
//     environment (REFRETRY_API_URL, REFRETRY_API_TOKEN; GitHub's and Gitea's Actions,
//     GitLab CI, and their tokens GITHUB_TOKEN, GITEA_TOKEN, CI_JOB_TOKEN), else the
//     remote's URL, https or ssh (internal/apicommit's Resolve). The token is sent
//     in a request header and written nowhere else.
//   - Each attempt fetches the branch (when it may have moved), replays the job's
//     commits onto it without a work tree (internal/replay, as push --rebase), and
//     has the forge make them: on GitHub with its git data API from the replay's
//     trees, which the attempt pushes first to a staging ref of its own
//     (refs/refretry/api/<branch>/<uuid>, removed at the end), so that modes,
//     symbolic links and large files are kept exactly; the branch moves with a
//     compare-and-swap on the value the replay is on. A person's token takes
//     GraphQL's createCommitOnBranch instead when the changes are regular files,
//     since GitHub signs that for any token. Gitea and GitLab have only file-level
//     APIs, which take the changes and make one commit; what they cannot write (a
//     symbolic link, a submodule, an executable bit on Gitea) is refused before
//     anything is sent.
//   - A lost race in the forge's words (GitHub's 422 "Update is not a fast forward",
//     GraphQL's HTTP 200 with STALE_DATA, Gitea's 403 "cannot lock ref" and its
//     unmapped 500, GitLab's per-file refusals) is failure.Behind, and an answer
//     that may have been applied (a 5xx) failure.Unknown: the next attempt, after the
//     engine's pause, fetches the branch and replays onto it, and a branch that
//     already has the job's changes ends the run as a success (so nothing lands
//     twice). A limit (403 or 429 with Retry-After or x-ratelimit-reset) is waited
//     for within the budget; a rule is failure.Declined with its lines as Policy,
//     credentials failure.Auth, anything else the forge refused failure.Rejected:
//     all final.
//   - Gitea and GitLab have no compare-and-swap on the branch that a client can ask
//     for: they make the commit on the branch as they find it. Every update and
//     deletion names what it replaces (Gitea: the blob, sha; GitLab: the last commit
//     that changed the file as of the replay's base, last_commit_id) and a creation
//     is refused where the path exists, so the commit lands only where none of its
//     files changed since the base: what a replay onto the new head would make
//     (internal/apicommit's gitea.go and gitlab.go).
//   - On success the branch's new value is fetched and what the push named (HEAD,
//     the checked-out branch, another local branch) moved to it, as push --rebase
//     leaves it; stderr gets git push's line for the ref.
//
// The package uses package retry's loop through refretry's one engine, and knows
// nothing of the command line.
package forge
