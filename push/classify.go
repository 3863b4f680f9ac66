package push

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/gitmsg"
)

// Reasons in porcelain lines (never translated). The server's lock failures appear
// only as these generic reasons; the remote: lines say what really happened.
const (
	reasonFailedRefs        = "failed to update refs"     // 2.51+: a whole batch failed
	reasonFailedRef         = "failed to update ref"      // 2.39: one ref's transaction failed
	reasonAtomicFailed      = "atomic transaction failed" // --atomic: the server's transaction failed
	reasonRefExists         = "reference already exists"  // 2.51+ files backend, also lock contention
	reasonAtomicPushFailed  = "atomic push failed"        // --atomic: collateral of a client-side rejection
	reasonAtomicPushFailure = "atomic push failure"       // --atomic: collateral of a server-side rejection
	reasonNonFastForward    = "non-fast-forward"
	reasonFetchFirst        = "fetch first"
	reasonIncorrectOld      = "incorrect old value provided" // the server's compare-and-swap failed
	// GitHub's backend commits refs itself and puts git's reason in the status:
	// "cannot lock ref '<ref>': <why>", with no remote: line.
	reasonCannotLockRef = "cannot lock ref '"
	reasonFailure       = "failure"               // GitHub: the backend failed to commit ("fatal error in commit_refs")
	reasonServerError   = "Internal Server Error" // GitHub: a 5xx in the ref phase
	// receive-pack could not move the received objects out of quarantine (seen from
	// git 2.55's receive-pack under a burst of concurrent pushes): nothing was updated,
	// and another attempt may get through.
	reasonMigrate = "unable to migrate objects to permanent storage"
	// receive-pack's connectivity check failed. Also a push that really lacks objects
	// (a shallow clone's); a lost race only with the remote's "fatal: bad object
	// refs/…" (evidence.refDeleted).
	reasonMissingObjects = "missing necessary objects"
	// GitHub's check of whether the push creates or changes a workflow file ran out of
	// time (the reason goes on: "; `workflows` scope may be required."). It reads like
	// a missing permission but is reported with tokens that hold it, and a re-run gets
	// through; nothing was updated. On the creation of a ref in a repository with many
	// refs it may time out every time (creationAdvice).
	reasonWorkflowTimeout = "Unable to determine if workflow can be created or updated due to timeout"
	// GitHub's refusal to let credentials without the workflows permission (a GitHub
	// App's) or the workflow scope (a personal access token, an OAuth App) create or
	// change a workflow file: "refusing to allow a GitHub App to create or update
	// workflow `<path>` without `workflows` permission". Final.
	reasonWorkflowRefused, reasonWorkflowRefusedFile = "refusing to allow a", " to create or update workflow `"
	// summaryRemoteFailure marks refs whose result the server never reported
	// ("remote failed to report status"): the connection broke after the pack was sent.
	summaryRemoteFailure = "[remote failure]"
)

// The tables below are slices and a switch, not maps: a package-level map is built by
// code at the start of every refretry process, whatever its command.

// rejectedReasons are refusals of the update itself: never retried.
var rejectedReasons = []string{
	"stale info", "already exists", "needs force", "remote ref does not exist", "no match",
}

// declinedReasons are the server's policies and hooks: never retried.
var declinedReasons = []string{
	"hook declined", "pre-receive hook declined", "deletion prohibited",
	"deny updating a hidden ref", "branch is currently checked out",
	"deletion of the current branch prohibited", "funny refname",
	"shallow update not allowed", "denying non-fast-forward",
	"non-fast-forward", // from the server: receive.denyNonFastForwards
	// GitHub's protected branches (GH006) and repository rules (GH013).
	"protected branch hook declined", "push declined due to repository rule violations",
}

// policyReasons are the declines whose remote: lines state the rule that refused the
// push: a forge's protected branch or ruleset, or a pre-receive hook.
var policyReasons = []string{
	"pre-receive hook declined", "hook declined",
	"protected branch hook declined", "push declined due to repository rule violations",
}

// classRank orders permanent classes: when refs fail for different reasons, the
// highest rank decides, so that a retryable or rebasable ref never hides a real refusal.
func classRank(c failure.Class) int {
	switch c {
	case failure.LockContention, failure.Transport, failure.Race, failure.Unknown:
		return 1
	case failure.Behind:
		return 2
	case failure.Rejected:
		return 3
	case failure.StaleLock:
		return 4
	case failure.Declined:
		return 5
	case failure.Other:
		return 6
	}
	return 0
}

// Classify turns a finished git push (exit code, --porcelain standard output, C-locale
// standard error) into a *failure.Error, or nil when it succeeded. Per-ref rejections
// decide first; only a push that printed none is judged by its error message. A
// failure it does not recognise is failure.Other, which is never retried.
func Classify(exitCode int, stdout, stderr []byte) *failure.Error {
	return classify(exitCode, stdout, stderr, nil).err
}

// verdict is one attempt as the Runner needs it: the failure, and the porcelain's refs
// with each rejected ref's class ("" for refs that did not fail or failed only
// because another did).
type verdict struct {
	err     *failure.Error
	report  Report
	classes []failure.Class
}

// The rejection of a ref in optional (Runner.Optional) neither decides the class nor
// fails the push.
func classify(exitCode int, stdout, stderr []byte, optional []string) verdict {
	rep := ParsePorcelain(stdout)
	v := verdict{report: rep}
	if exitCode == 0 {
		return v
	}
	judged, optionalOnly := withoutOptional(rep.Refs, optional)
	if optionalOnly {
		return v // git exited 1 for the optional refs alone
	}
	e := &failure.Error{Command: "push", ExitCode: exitCode, Class: failure.Other}
	v.err = e
	if exitCode == 129 {
		e.Class, e.Message = failure.Usage, gitmsg.LastMessage(stderr)
		return v
	}
	rejected := false
	for _, s := range judged {
		rejected = rejected || s.Rejected()
	}
	if rejected {
		ev := remoteEvidence(stderr)
		v.classes = classifyRefs(e, judged, ev)
		if e.Class == failure.Declined && slices.Contains(policyReasons, refReason(e)) {
			e.Policy = ev.policy
		}
		if e.Class == failure.Transport {
			e.Cause = transportFailure(stderr, e)
			if e.Cause == nil {
				e.Cause = &TransportError{Message: e.Message}
			}
		}
		e.Advice = advice(e)
		return v
	}
	e.Message = gitmsg.LastMessage(stderr)
	if line, ok := gitmsg.Unsupported(stderr); ok {
		// The first cause git names decides: the hang-up that follows is its effect.
		e.Class, e.Message = failure.Declined, line
		e.Advice = advice(e)
		return v
	}
	if t := gitmsg.ReadTransport(stderr); t.Auth {
		e.Class = failure.Auth
	} else if te := transportFailure(stderr, e); te != nil {
		e.Class, e.Cause = failure.Transport, te
	}
	return v
}

// withoutOptional is refs with the rejections of optional refs taken for successes,
// for judging the push; optionalOnly is set when those were its only rejections.
func withoutOptional(refs []RefStatus, optional []string) (judged []RefStatus, optionalOnly bool) {
	if len(optional) == 0 {
		return refs, false
	}
	judged = slices.Clone(refs)
	others := false
	for i, s := range judged {
		switch {
		case s.Rejected() && slices.Contains(optional, s.To):
			judged[i].Flag, optionalOnly = '=', true
		case s.Rejected():
			others = true
		}
	}
	return judged, optionalOnly && !others
}

// classifyRefs picks the class of a push with rejected refs from the worst of them,
// and returns each ref's class.
func classifyRefs(e *failure.Error, refs []RefStatus, ev evidence) []failure.Class {
	best := failure.Class("")
	var first *RefStatus
	classes := make([]failure.Class, len(refs))
	for i, s := range refs {
		if !s.Rejected() {
			continue
		}
		if first == nil {
			first = &refs[i]
		}
		c, detail := refClass(s, ev)
		classes[i] = c
		if c == "" {
			continue // collateral of another ref's failure
		}
		if best == "" || classRank(c) > classRank(best) {
			best = c
			e.Message, e.Ref, e.Lock, e.Moved = describe(s), s.To, nil, nil
			e.Cause = &RejectedError{Ref: s.To, From: s.From, Reason: s.Reason, Remote: s.RemoteRejected()}
			switch d := detail.(type) {
			case *failure.Lock:
				e.Lock = d
			case *failure.Moved:
				e.Moved = d
			}
		}
	}
	if best == "" {
		best = failure.Other
		e.Message, e.Ref = describe(*first), first.To
		e.Cause = &RejectedError{Ref: first.To, From: first.From, Reason: first.Reason, Remote: first.RemoteRejected()}
	}
	e.Class = best
	return classes
}

// refClass classifies one rejected ref; "" means it only failed because another did.
// The detail returned, if any, is the server's evidence that decided: a *failure.Lock
// or a *failure.Moved.
func refClass(s RefStatus, ev evidence) (failure.Class, error) {
	switch {
	case s.Summary == summaryRemoteFailure:
		// The server took the pack but its report was lost: the outcome is unknown.
		return failure.Transport, nil
	case !s.RemoteRejected():
		return localRefClass(s.Reason), nil
	}
	if ref, inner, ok := cannotLockReason(s.Reason); ok {
		return forgeRefClass(s, ref, inner)
	}
	return remoteRefClass(s, ev)
}

// localRefClass classifies a ref that git refused to push, for the reason it gave.
func localRefClass(reason string) failure.Class {
	switch {
	case reason == reasonNonFastForward || reason == reasonFetchFirst:
		return failure.Behind
	case reason == reasonAtomicPushFailed:
		return ""
	case slices.Contains(rejectedReasons, reason):
		return failure.Rejected
	}
	return failure.Other
}

// remoteRefClass classifies a ref the server refused, by its reason and by what the
// server's remote: lines showed.
func remoteRefClass(s RefStatus, ev evidence) (failure.Class, error) {
	switch {
	case strings.HasPrefix(s.Reason, reasonWorkflowTimeout):
		return failure.Unknown, nil
	case workflowRefused(s.Reason):
		return failure.Declined, nil
	}
	switch s.Reason {
	case reasonFailure:
		if ev.commitRefs {
			return failure.Unknown, nil
		}
		return failure.Other, nil
	case reasonServerError, reasonMigrate:
		return failure.Unknown, nil
	case reasonMissingObjects:
		if ev.refDeleted {
			return failure.Unknown, nil
		}
		return failure.Other, nil
	case reasonFailedRefs, reasonFailedRef, reasonAtomicFailed, reasonIncorrectOld:
		return failedUpdateClass(s, ev)
	case reasonRefExists:
		// Also a genuine "ref exists" refusal; contention only when the server's
		// message names a lock on this very ref.
		if l := pickLock(ev.locks, s.To); l != nil {
			return lockClass(l), l
		}
		return failure.Rejected, nil
	case reasonAtomicPushFailure:
		return "", nil
	}
	switch {
	case slices.Contains(rejectedReasons, s.Reason):
		return failure.Rejected, nil
	case slices.Contains(declinedReasons, s.Reason):
		return failure.Declined, nil
	}
	return failure.Other, nil
}

// failedUpdateClass classifies a ref whose update failed on the server for a reason
// that does not say why (a failed ref transaction, a failed compare-and-swap): the
// remote: lines decide, naming a ref that moved or a lock that was held.
func failedUpdateClass(s RefStatus, ev evidence) (failure.Class, error) {
	if m := ev.moved[s.To]; m != nil {
		return failure.Behind, m
	}
	if s.Reason == reasonIncorrectOld {
		// The server's compare-and-swap failed and it did not say why (GitLab):
		// the ref moved after the advertisement. Verified first, like any
		// compare-and-swap failure on the server.
		return failure.Behind, &failure.Moved{Ref: s.To}
	}
	if l := pickLock(ev.locks, ""); l != nil {
		return lockClass(l), l
	}
	if len(ev.moved) > 0 && s.Reason == reasonAtomicFailed {
		return "", nil // another ref of the atomic push moved
	}
	return failure.Other, nil
}

// cannotLockReason reads a rejection reason that is git's own ref-update error, as
// GitHub's backend reports it: "cannot lock ref '<ref>': <inner>".
func cannotLockReason(reason string) (ref, inner string, ok bool) {
	if !strings.HasPrefix(reason, reasonCannotLockRef) {
		return "", "", false
	}
	inner, ref = gitmsg.StripCannotLockRef(reason)
	return ref, inner, ref != ""
}

// forgeRefClass classifies a rejection whose reason is git's ref-update error for ref
// (GitHub): a failed compare-and-swap is a push behind the remote; a ref created or
// deleted meanwhile is a race, verified and retried; a held lock is contention; any
// other reason (a directory/file conflict between ref names) is final.
func forgeRefClass(s RefStatus, ref, inner string) (failure.Class, error) {
	switch {
	case gitmsg.CAS().MatchString(inner):
		m := gitmsg.CAS().FindStringSubmatch(inner)
		return failure.Behind, &failure.Moved{Ref: ref, Actual: m[1], Expected: m[2]}
	case inner == "reference already exists" || strings.HasPrefix(inner, "unable to resolve reference "):
		return failure.Race, nil
	case gitmsg.Exists().MatchString(inner):
		return failure.LockContention, &failure.Lock{Ref: ref, Path: gitmsg.Exists().FindStringSubmatch(inner)[1], Remote: true}
	}
	return failure.Rejected, nil
}

// workflowRefused reports whether reason is GitHub's refusal to let the push's
// credentials create or change a workflow file.
func workflowRefused(reason string) bool {
	return strings.HasPrefix(reason, reasonWorkflowRefused) && strings.Contains(reason, reasonWorkflowRefusedFile)
}

// refReason is the reason of the ref that decided e's class.
func refReason(e *failure.Error) string {
	var r *RejectedError
	if errors.As(e.Cause, &r) {
		return r.Reason
	}
	return ""
}

// pickLock returns the server's lock failure for ref ("" for any), preferring a
// stale one, which must stop the retries.
func pickLock(locks []*failure.Lock, ref string) *failure.Lock {
	var found *failure.Lock
	for _, l := range locks {
		if ref != "" && l.Ref != ref {
			continue
		}
		if l.Stale {
			return l
		}
		if found == nil {
			found = l
		}
	}
	return found
}

func lockClass(l *failure.Lock) failure.Class {
	if l.Stale {
		return failure.StaleLock
	}
	return failure.LockContention
}

func describe(s RefStatus) string {
	to := s.To
	if s.From != "" {
		to = s.From + " -> " + s.To
	}
	if s.Reason == "" {
		return s.Summary + " " + to
	}
	return s.Summary + " " + to + " (" + s.Reason + ")"
}

// creationAdvice is refretry's line about refs GitHub's workflow check timed out on
// while the remote did not have them (absent): the check may time out on every
// creation of a ref in a repository with many refs, which no retry gets past. ""
// when no ref was such a creation.
func creationAdvice(refs []RefStatus, absent map[string]bool) string {
	var created []string
	for _, s := range refs {
		if s.RemoteRejected() && s.From != "" && absent[s.To] && strings.HasPrefix(s.Reason, reasonWorkflowTimeout) {
			created = append(created, s.To)
		}
	}
	if len(created) == 0 {
		return ""
	}
	what := created[0]
	if len(created) > 1 {
		what += fmt.Sprintf(" and %d more new refs", len(created)-1)
	}
	return "GitHub's check for workflow changes timed out creating " + what + ", as it may on every new ref " +
		"in a repository with many refs: push the commits to a ref that already exists first, " +
		"or create the ref on its own (for example through GitHub's API), then push again"
}

// SignatureRule reports whether a rule's lines (failure.Error's Policy) refuse
// commits for their signatures: GitHub's "Commits must have verified signatures"
// (GH006, GH013), GitLab's "Commit must be signed" ("… with a GPG key" before GitLab
// 16), Gitea's and Forgejo's "… is protected from unverified commit …", and a hook
// whose words speak of a signature or of signed commits.
func SignatureRule(policy []string) bool {
	text := strings.ToLower(strings.Join(policy, "\n"))
	if strings.Contains(text, "unverified commit") {
		return true
	}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return r < 'a' || r > 'z' }) {
		switch w {
		case "signed", "unsigned", "signature", "signatures":
			return true
		}
	}
	return false
}

// transportFailure looks for a transport failure in git's own stderr lines; it
// records in e how long the server asked to wait, when it said.
func transportFailure(stderr []byte, e *failure.Error) *TransportError {
	t := gitmsg.ReadTransport(stderr)
	if t.Line == "" || t.Auth {
		return nil
	}
	e.Wait, e.Refused = t.RetryAfter, t.Refused
	return &TransportError{HTTPStatus: t.HTTPStatus, Message: t.Line}
}

// advice is refretry's own line about a final failure that git's output does not
// explain: for a refusal by the remote's rules, what the rule says; for a remote
// without atomic pushes, how to push without; for a stale lock on the remote, that it
// must be removed there.
func advice(e *failure.Error) string {
	switch {
	case e.Class == failure.Declined && SignatureRule(e.Policy):
		return "the remote's rules refused the push, so refretry did not retry: " + strings.Join(e.Policy, " ") +
			" (the remote wants signed commits: sign the job's commits with commit.gpgSign, gpg.format and user.signingKey, " +
			"and refretry signs every commit it replays the same way; docs/push.md#signed-commits)"
	case e.Class == failure.Declined && len(e.Policy) > 0:
		return "the remote's rules refused the push, so refretry did not retry: " + strings.Join(e.Policy, " ")
	case e.Class == failure.Declined && workflowRefused(refReason(e)):
		return "the remote does not let these credentials create or change a workflow file, so refretry did not retry: " +
			"push with a token that has the workflows permission (the workflow scope for a personal access token), " +
			"or without the change under .github/workflows"
	case e.Class == failure.Declined && strings.Contains(e.Message, "does not support --atomic push"):
		return "the remote does not support atomic pushes; push with refretry push --no-atomic " +
			"(each ref is then accepted or refused on its own)"
	case e.Class == failure.StaleLock && e.Lock != nil:
		return fmt.Sprintf("the remote's lock %s was held by process %d, which is gone; "+
			"it must be removed on the server, so refretry did not retry", e.Lock.Path, e.Lock.PID)
	}
	return ""
}
