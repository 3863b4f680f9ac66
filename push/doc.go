// Package push runs `git push` as a retryable operation.
//
// The contract:
//
//   - git push always receives the caller's arguments verbatim, plus --porcelain (so
//     that every ref's outcome can be read) and, unless [Runner].NoAtomic is set,
//     --atomic (all refs or none).
//   - Each attempt's outcome is read from the porcelain lines
//     (`<flag>\t<from>:<to>\t<summary> (<reason>)`, then `Done`) and from git's stderr,
//     including the server's `remote:` lines. [Classify] turns a failed attempt into a
//     [*failure.Error] with a [failure.Class]; only the classes that
//     [failure.Class.Retryable] accepts are retried (lock contention, a transport
//     failure, a lost race on the server, an unknown outcome), and [failure.Behind] only
//     when rebasing or regenerating was asked for. Everything else, including any
//     message the package does not know, is permanent (fail closed).
//   - A remote lock failure counts only when the server's `remote:` lines prove it: a
//     rejection reason alone ("failed to update refs", "atomic transaction failed", or a
//     files-backend "reference already exists") is not enough.
//   - A ref the server refused because another push moved it after the advertisement
//     (its compare-and-swap failed: "is at X but expected Y") is [failure.Behind], like a
//     non-fast-forward: it is rebased with [Runner].Rebase, and never blindly retried.
//   - An attempt whose outcome is unknown (the transport failed after the pack may have
//     been applied) is verified: before the next attempt, before giving up, and when a
//     later attempt is refused, the refs it pushed are compared with `git ls-remote`,
//     and a remote that already holds every pushed value (deleted refs absent) is a
//     success. The refs come from the porcelain when git printed them, else from the
//     caller's explicit refspecs; without either, git's own retry ("up to date") decides.
//     A server-side compare-and-swap failure is verified the same way, because an HTTP
//     library may have sent the same request twice.
//   - Unless the caller configured http.lowSpeedLimit or http.lowSpeedTime (in git
//     config, through -c or GIT_CONFIG_*, or as GIT_HTTP_LOW_SPEED_*), git runs with a
//     stall floor (fewer than a byte a second for 30 s) so that a wedged transfer fails, and is retried,
//     instead of hanging. Remotes given as file://, ssh:// or git:// URLs, scp-like
//     addresses or paths do not use HTTP and are left alone.
//   - With [Runner].Rebase, a push rejected as behind (non-fast-forward, fetch first, or
//     moved during the push) for one ref pushed from the checked-out branch fetches the remote tip, rebases the local commits onto it and
//     pushes again under the same budget. A rebase conflict runs `git rebase --abort`,
//     checks that the branch and HEAD are back where they were, and stops with a
//     *RebaseError.
//   - Without [Runner].Rebase, the settings' PushRebase (the job's opt-in, read once a
//     push failed) rebases such a push the same way, unless it is one that must not
//     be rebased: a force push, a lease, a mirror, a deletion or a tag (optin.go); it
//     is then pushed once, as git would.
//   - Output is git's, from the final attempt only: the porcelain on standard output
//     when the caller asked for --porcelain, otherwise rendered as git's human table on
//     standard error. The exit code is git's; a verified success exits 0.
//   - git runs with LC_ALL=C and without LANGUAGE, and gets SIGTERM (never SIGKILL) when
//     the context is cancelled.
//
// The package uses [github.com/refretry/refretry/retry] (through the attempt engine)
// for the schedule and knows nothing of the command line.
package push
