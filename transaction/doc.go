// Package transaction runs `git update-ref` as a retryable transaction.
//
// The contract:
//
//   - git always receives the caller's arguments verbatim. [ParseArgs] reads them only
//     as far as needed (is it --stdin? -z? -d? --batch-updates?); arguments it cannot
//     read with certainty run git once, unwrapped.
//   - Only lock contention is retried ([failure.LockContention]). [Classify] reads git's
//     final C-locale message; anything it does not recognise is [failure.Other] and is
//     never retried (fail closed). A held lock that is stale stops the run at once
//     ([failure.StaleLock]): older than the stale-after limit with no running holder on
//     record, or with a holder pid that is not running here and older than the pid
//     grace ([settings.Settings]). A missing pid alone, git's "no longer running" advice
//     included, is lock contention: a holder in another pid namespace (another
//     container sharing the repository) looks just the same.
//   - --stdin input is read once into a spool (memory, then an unlinked temporary
//     file) and replayed whole on each attempt. With start/prepare/commit/abort, the
//     caller's stream is proxied: a lock failure is retried by replaying the
//     transaction in a fresh git, and the caller sees each "<verb>: ok" once, in order.
//   - With [Runner.Group], a one-ref update may join its repository's group commit
//     (docs/coalescing.md): one process's git commits the updates of everyone
//     queued, and an update the group does not take runs the usual way. A Runner
//     does exactly what the refretry command does; the command only fills in its
//     fields.
//   - Output is git's, from the final attempt only; the exit code is git's.
//   - git runs with LC_ALL=C and without LANGUAGE, and is sent SIGTERM (never SIGKILL)
//     when the context is cancelled, so it removes its own lock files.
package transaction
