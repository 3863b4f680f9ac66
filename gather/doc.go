// Package gather lands the commits of many CI jobs on one branch of a remote with a
// few contended updates instead of one per job: group commit across machines, with
// the remote as the only meeting point.
//
// N jobs that each push to one branch race: every success moves the branch under the
// pushes still in flight, so N jobs cost about N²/4 pushes. With gather, each job:
//
//  1. Stages its commit: one push creating a ref of its own,
//     refs/refretry/gather/<branch>/<id> (<id> a time-ordered UUIDv7, with a Key
//     followed by its authenticator), which nobody else contends for. From then on the result is durable: it lands even if the job
//     dies (by another job's gather, or `refretry gather land`).
//  2. Offers, in the same push (not atomic), to create refs/refretry/lease/<branch> with a
//     compare-and-swap, pointing at its own staged commit: of the jobs that stage at once,
//     the one whose offer the remote takes gathers, and no other pushes for the lease.
//     The others wait, reading the remote with ls-remote. Every look is a request that
//     every waiting job makes, so a waiter looks when its commit may have landed: first
//     as long after its staging push as that push took, then when the gatherer's
//     forecast (refs/refretry/eta/<branch>/<at>-<wave>, published with each wave, and
//     announced before a wave that has none) says the wave that takes its commit lands.
//     A free lease a waiter sees is taken at once only by the oldest staged job, by the
//     others after it stayed free for their rank; a lease that stays unchanged for
//     LeaseTimeout (as seen by each waiter on its own clock) counts as abandoned and is
//     taken over with another compare-and-swap.
//  3. The gatherer fetches the branch and up to MaxPerWave staged commits (with their
//     parents, so a depth-1 clone suffices), replays each staged commit onto the tip
//     in id order without a work tree (internal/replay: merge-tree against the commit's
//     parent, the repository's merge attributes applied; author, committer, dates and
//     message kept, and a "Refretry-Gather: <id>" trailer added), and pushes
//     atomically: the branch from its old value to the new tip, the deletion of every
//     staged ref it included (each at its staged value), the lease moved to the new tip,
//     and the next wave's forecast. It gathers wave after wave while commits are staged,
//     then lets the lease go (and removes the forecast). A staged commit that does not
//     replay cleanly is moved, in the same push,
//     to refs/refretry/conflict/<branch>/<id>, for its own job to deal with; a
//     gatherer never fails because of someone else's conflict.
//
// The outcome is checkable from the remote alone: a job's staged ref disappears only
// in an atomic push that also moved the branch to a commit containing it (landed),
// moved it to the conflict namespace (conflict), or marked it discarded
// (refs/refretry/discarded/<branch>/<id>, by `refretry gather discard`). So a job exits
// 0 exactly when its commit is on the branch. Nothing is half-applied and nothing lands
// twice: every ref a gather changes is compare-and-swapped in one atomic push, so of
// two gatherers racing at most one succeeds, and the other's push changes nothing.
//
// Who may stage: a gatherer lands staged commits with its own credentials, so with a
// Key (a secret the jobs of one pipeline share) a job's staged ref is named
// refs/refretry/gather/<branch>/<uuid>.<mac>, mac the first 32 hex digits of
// HMAC-SHA256(Key, "refretry-gather-v1" NUL branch NUL uuid NUL commit), and a
// gatherer lands only the staged commits whose mac verifies against the value
// ls-remote shows and whose uuid's time is within MaxAge (and at most 5 minutes
// ahead). Anything else staged is never landed and never deleted by a gatherer: each
// run names it once in a note, List marks it unverified, Land leaves it unless Accept
// names it, Discard may remove it. Without a Key a gatherer lands whatever is staged:
// it trusts everyone who may push refs/refretry/* to the remote. docs/security.md has
// the trust model and the replay window.
//
// Signed commits: a gatherer signs every commit it writes as its repository signs
// commits (commit.gpgSign, gpg.format, user.signingKey), and always one that replays
// a signed commit; a gathered commit thus carries the gatherer's signature, made with
// the key every job of a pipeline holds. A job that must sign and cannot fails before
// it stages anything; a gatherer that cannot sign a commit of its wave pushes nothing
// of it and lets the lease go. A wave the remote refuses for its signatures ends the
// gatherer's run, without a smaller wave.
//
// Through a forge's API (Runner.API): the gatherer lands each wave with one commit the
// forge makes (its tree the replayed wave's, a Refretry-Gather trailer for each staged
// commit it lands), instead of pushing the branch. It first moves the lease to that
// commit (sending its objects, and recording the wave in flight), then has the forge
// make it, then deletes the wave's staged refs and moves the lease to the branch's new
// head. A gatherer that takes over a lease left at a wave in flight reads the branch's
// trailers since that wave's parent, and deletes the staged refs of the ids found there
// without landing them again.
//
// A job whose commits are several is staged as one commit (the tree of its last
// commit on the remote tip it started from, with the last commit's author and
// message). A job's commit already on the branch lands at once.
package gather
