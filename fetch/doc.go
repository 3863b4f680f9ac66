// Package fetch runs `git fetch` with the caller's arguments and retries only what
// another identical fetch can fix. A fetch moves only local refs, so running it again
// is safe in a way that running a push again is not; what matters is to retry nothing
// that cannot change.
//
// Retried:
//
//   - Local lock contention: a held `<ref>.lock`, packed-refs.lock, shallow.lock, or
//     reftable's tables.list.lock ("cannot lock references"). A lock whose holder is
//     known to be gone is a stale lock instead (internal/lockfile): it stops the run,
//     or, when asked, is removed and the fetch runs again.
//   - A lost race: "cannot lock ref '<ref>': is at <new> but expected <old>", printed
//     when another process (usually another fetch) moved the ref during this fetch.
//   - Transport failures, as push retries them: connections refused, reset or hung
//     up, HTTP 5xx, 408 and 429, and transfers stalled under the low-speed floor
//     (internal/httpconf).
//
// Everything else fails at once with git's output and exit code: an authentication
// failure, a missing repository or ref, a rejected update of a local ref
// (non-fast-forward, "would clobber existing tag"), a reference-transaction hook's
// refusal, a usage error, and any message refretry does not know. A fetch that failed
// on locks or lost races is retried only when git names no other cause; otherwise the
// first other cause git names decides (an "unable to access" before the hang-up it
// led to, a missing ref before the hang-up that follows).
//
// The caller sees the final attempt's output only, on the streams git used.
package fetch
