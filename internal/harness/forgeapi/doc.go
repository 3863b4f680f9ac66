// Package forgeapi fakes the APIs through which a job makes a commit on a GitHub or
// GitLab branch without git push (issue 39, refretry push --api), for offline tests.
// It is test support, not product.
//
// # Modelled
//
// StartGitHub and StartGitLab serve an API on 127.0.0.1 that writes real git
// objects into a real bare repository with the git binary (hash-object, mktree,
// commit-tree, update-ref), and the same repository over smart HTTP beside it
// (internal/harness/gitserver, Options.Git): a test pushes a job's objects to a
// staging ref at CloneURL, calls the API with the staged tree, and fetches the
// result.
//
//   - GitHub REST git data, rooted at APIURL as at api.github.com: POST
//     /repos/{o}/{r}/git/blobs (utf-8 or base64), git/trees (base_tree; modes
//     100644, 100755, 120000, 040000, 160000; "sha": null deletes a path; content
//     writes a blob), git/commits (parents, message, optional author and committer)
//     and GET git/commits/{sha}, both with verification, and GET
//     /repos/{o}/{r}/commits/{sha or branch} (verification under "commit");
//     GET git/ref/{ref}, POST
//     git/refs (422 "Reference already exists"), PATCH git/refs/{ref}. With force
//     false an update must fast-forward the branch as it is when the update is
//     made, checked and applied with update-ref's compare-and-swap: of updates
//     racing from one head exactly one lands, the others get 422 "Update is not a
//     fast forward".
//   - GitHub GraphQL at GraphQLURL: createCommitOnBranch, and queries of
//     repository(owner, name) { ref(qualifiedName) / defaultBranchRef { target {
//     ... on Commit { oid ... } } } } and viewer. expectedHeadOid is compared with
//     the branch's head before the commit is made and again, by compare-and-swap,
//     when the branch moves: a lost race is HTTP 200 with data
//     {"createCommitOnBranch": null} and one STALE_DATA error. Additions are written
//     as regular files (100644): an executable loses its bit, a symbolic link becomes
//     a file; merges, submodules, root commits and missing branches cannot be
//     written, as on GitHub.
//   - Signing: every createCommitOnBranch commit, and a REST commit made with an App
//     token (Token.App) that names neither author nor committer, is signed with the
//     server's key (Options.Signer, else a new SSH key) by commit-tree -S,
//     committer "GitHub <noreply@github.com>", as GitHub's web-flow key signs; git
//     verify-commit with Signer().ConfigArgs() and Env() accepts it. verification.reason is "valid" for those, "unsigned" for
//     unsigned commits, "unknown_key" for any other signature.
//   - GitLab at APIURL (/api/v4): POST /projects/:id/repository/commits with
//     actions create, update, delete, move and chmod (content, encoding base64,
//     previous_path, execute_filemode, last_commit_id; start_branch or start_sha for
//     a new branch; author_name, author_email), GET
//     /projects/:id/repository/branches/:branch, and GET or HEAD
//     /projects/:id/repository/files/:file_path?ref= (the last commit that changed
//     the file, also as X-Gitlab-Last-Commit-Id); :id is ProjectID or the
//     URL-encoded path. There is no compare-and-swap on the branch: a commit is made on the
//     branch as it is when the request is served, whatever the client read
//     (parent_ids says which). last_commit_id is checked for update, move and delete
//     against the last commit that changed the file ("The file has changed since
//     you started editing it: <path>"), as GitLab's Files::MultiService does (read
//     in its source): docs/forges.md's "ignored" holds for the branch, not for the
//     file. A create of an existing path is 400 "A file with this name already
//     exists". GitLab never signs.
//   - Tokens (Options.Tokens, DefaultTokens): GitHub's Authorization: Bearer or
//     token; GitLab's PRIVATE-TOKEN, JOB-TOKEN (job tokens only) or Authorization:
//     Bearer. Rules (Options.Rules) refuse updates in the API's words.
//   - Faults, by request number (Options.Faults) or by a callback that sees each
//     request's Kind and number (Options.Inject): a forced race (LandFirst: another
//     writer's commit lands on the branch, then the request is served), any answer
//     in place of the request's (rate limits, abuse, 5xx, refusals, a bad token),
//     after applying the request if Apply says so (the outcome is lost).
//     Requests and Count count the requests, by kind.
//
// # Transcribed from documentation/reports, not captured
//
// No forge was captured for this package; every forge text is transcribed from
// documentation or users' reports. GitHub: "Update is not a fast forward",
// "Reference already exists", "Reference does not exist", 404 "Not Found", "No
// commit found for SHA: <ref>", "Bad
// credentials", "Resource not accessible by integration"; a ruleset's "Repository
// rule violations found\n\n<rule>\n\n" (satisfactory-factories/application#67) with
// "Commits must have verified signatures." and "Changes must be made through a pull
// request." (docs/forges.md); the secondary limit's message with Retry-After, and
// x-ratelimit-remaining: 0 with x-ratelimit-reset (GitHub's rate-limit
// documentation); the abuse 403 with "code": "abuse" and no Retry-After
// (docs/forges.md); "Tree SHA does not exist" and "Parent SHA does not exist or is
// not a commit object" (reports). GraphQL: STALE_DATA's shape and words, "Expected
// branch to point to \"<oid>\" but it did not.  Pull and try again."
// (ministryofjustice/modernisation-platform#11985); RATE_LIMITED on a 200
// (docs/forges.md); the null expectedHeadOid message (avitorio/outstatic#17);
// FORBIDDEN's "Resource not accessible by integration"; "Could not resolve to a
// Repository with the name '<o>/<n>'.". GitLab: "A file with this name already
// exists" (docs/forges.md), "A file with this name doesn't exist", "The file has
// changed since you started editing it: <path>" (its source), "401 Unauthorized",
// "403 Forbidden", "404 Project Not Found", "404 Branch Not Found", "You are not
// allowed to push into this branch", parameter validation's {"error": "<field> is
// missing"}, and the throttle's 429 "Retry later" with Retry-After and RateLimit-*
// headers (GitLab's rate-limit documentation).
//
// # Simplified
//
//   - Refusals of malformed requests (bad modes, bad base64, a path through a file,
//     missing fields, a deletion of a missing path, a missing branch, a rule broken
//     through GraphQL) use this package's words with the forge's status or error
//     type.
//   - GraphQL is a subset: no named fragments, directives or block strings (a parse
//     error), no schema validation (an unknown field is an error beside the rest of
//     data, where GitHub refuses the whole document), a branch only by
//     repositoryNameWithOwner and branchName.
//   - GitLab's commits are made one at a time (a lock per server), and a branch
//     someone else moved meanwhile (a push, Land) is read again, so a commit is
//     never refused for a concurrent one; GitLab may fail a request that loses that
//     window, in words not on record. start_branch and start_sha only count for a
//     branch that does not exist; force is not read. RequireSignatures does nothing
//     there (the push rule does not apply to API commits); RequirePullRequest is a
//     protected branch.
//   - verification's signature and payload are null; REST's signature field (a
//     commit the client signed) is refused; only the server's key is trusted.
//   - No pagination, ETags or rate-limit headers on ordinary answers, and no
//     rate-limit budget: a limit is a fault. Dates come from Options.Now.
package forgeapi
