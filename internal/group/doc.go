// Package group is refretry's group commit: concurrent single-ref update-ref
// invocations on one repository hand their updates to one of them, the leader, which
// commits them all with one `git update-ref --stdin -z` (docs/coalescing.md).
//
// It has one entry point, [Join], and no state outside the processes taking part:
// they meet at an abstract Unix socket named after the repository (Linux only;
// elsewhere [Join] always answers "run it yourself"). Whoever binds the name leads;
// the others connect and wait in the socket's queue. A leader commits its own update
// with whatever is queued at that moment, tells each member the outcome, and hands
// the listening socket, queue and all, to the next waiting invocation, which leads
// the next group. An invocation that finds nobody waiting runs its own update the
// usual way while holding the socket, so that whoever comes meanwhile queues behind
// it ([Lease]).
//
// Nothing is lost or applied twice when any process dies at any moment: before the
// leader gives its git the input, every member holds git's stdout and stderr (memory
// files) and a process descriptor of git, passed over the socket. A member that loses
// its leader waits for that git to end and reads "commit: ok" from its stdout itself.
// A member that stops waiting (its budget ran out, or it was interrupted) shuts down
// its receiving side first: from then on the leader cannot include it in a git, and
// what it had already been told decides its outcome.
//
// A member whose update fails in a group, and every member of a group that fails for
// a reason git does not pin on some of them, is told to run its update alone, so that
// it meets the failure with its own command and prints git's own words for it.
package group
