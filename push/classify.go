package push

import (
	"errors"
	"strings"

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
	// summaryRemoteFailure marks refs whose result the server never reported
	// ("remote failed to report status"): the connection broke after the pack was sent.
	summaryRemoteFailure = "[remote failure]"
)

// rejectedReasons are refusals of the update itself: never retried.
var rejectedReasons = map[string]bool{
	"stale info": true, "already exists": true,
	"needs force": true, "remote ref does not exist": true, "no match": true,
}

// declinedReasons are the server's policies and hooks: never retried.
var declinedReasons = map[string]bool{
	"hook declined": true, "pre-receive hook declined": true, "deletion prohibited": true,
	"deny updating a hidden ref": true, "branch is currently checked out": true,
	"deletion of the current branch prohibited": true, "funny refname": true,
	"shallow update not allowed": true, "denying non-fast-forward": true,
	"non-fast-forward": true, // from the server: receive.denyNonFastForwards
	// GitHub's protected branches (GH006) and repository rules (GH013).
	"protected branch hook declined": true, "push declined due to repository rule violations": true,
}

// policyReasons are the declines whose remote: lines state the rule that refused the
// push: a forge's protected branch or ruleset, or a pre-receive hook.
var policyReasons = map[string]bool{
	"pre-receive hook declined": true, "hook declined": true,
	"protected branch hook declined": true, "push declined due to repository rule violations": true,
}

// classRank orders permanent classes: when refs fail for different reasons, the
// highest rank decides, so that a retryable or rebasable ref never hides a real refusal.
var classRank = map[Class]int{
	ClassLockContention: 1, ClassTransport: 1, ClassRace: 1, ClassUnknown: 1, ClassBehind: 2, ClassRejected: 3,
	ClassStaleLock: 4, ClassDeclined: 5, ClassOther: 6,
}

// Classify turns a finished git push (exit code, --porcelain standard output, C-locale
// standard error) into an *Error, or nil when it succeeded. Per-ref rejections decide
// first; only a push that printed none is judged by its error message. A failure it
// does not recognise is ClassOther, which is never retried.
func Classify(exitCode int, stdout, stderr []byte) *Error {
	if exitCode == 0 {
		return nil
	}
	rep := ParsePorcelain(stdout)
	e := &Error{ExitCode: exitCode, Class: ClassOther, Refs: rep.Refs, URL: rep.URL}
	if exitCode == 129 {
		e.Class, e.Message = ClassUsage, gitmsg.LastMessage(stderr)
		return e
	}
	rejected := false
	for _, s := range rep.Refs {
		rejected = rejected || s.Rejected()
	}
	if rejected {
		ev := remoteEvidence(stderr)
		classifyRefs(e, ev)
		if e.Class == ClassDeclined && policyReasons[refReason(e)] {
			e.Policy = ev.policy
		}
		if e.Class == ClassTransport {
			if te, _ := transportFailure(stderr); te != nil {
				e.Cause = te
			} else {
				e.Cause = &TransportError{Message: e.Message}
			}
		}
		return e
	}
	e.Message = gitmsg.LastMessage(stderr)
	if line, ok := gitmsg.Unsupported(stderr); ok {
		// The first cause git names decides: the hang-up that follows is its effect.
		e.Class, e.Message = ClassDeclined, line
		return e
	}
	if te, auth := transportFailure(stderr); auth {
		e.Class = ClassAuth
	} else if te != nil {
		e.Class, e.Cause = ClassTransport, te
	}
	return e
}

// classifyRefs picks the class of a push with rejected refs from the worst of them.
func classifyRefs(e *Error, ev evidence) {
	best := Class("")
	var first *RefStatus
	e.classes = make([]Class, len(e.Refs))
	for i, s := range e.Refs {
		if !s.Rejected() {
			continue
		}
		if first == nil {
			first = &e.Refs[i]
		}
		c, cause := refClass(s, ev)
		e.classes[i] = c
		if c == "" {
			continue // collateral of another ref's failure
		}
		if best == "" || classRank[c] > classRank[best] {
			best = c
			e.Message = describe(s)
			if cause != nil {
				e.Cause = cause
			} else {
				e.Cause = &RejectedError{Ref: s.To, From: s.From, Reason: s.Reason, Remote: s.RemoteRejected()}
			}
		}
	}
	if best == "" {
		best = ClassOther
		e.Message = describe(*first)
		e.Cause = &RejectedError{Ref: first.To, From: first.From, Reason: first.Reason, Remote: first.RemoteRejected()}
	}
	e.Class = best
}

// refClass classifies one rejected ref; "" means it only failed because another did.
// The error returned, if any, is the server's evidence that decided.
func refClass(s RefStatus, ev evidence) (Class, error) {
	if s.Summary == summaryRemoteFailure {
		// The server took the pack but its report was lost: the outcome is unknown.
		return ClassTransport, nil
	}
	if !s.RemoteRejected() {
		switch {
		case s.Reason == reasonNonFastForward || s.Reason == reasonFetchFirst:
			return ClassBehind, nil
		case s.Reason == reasonAtomicPushFailed:
			return "", nil
		case rejectedReasons[s.Reason]:
			return ClassRejected, nil
		}
		return ClassOther, nil
	}
	if ref, inner, ok := cannotLockReason(s.Reason); ok {
		return forgeRefClass(s, ref, inner)
	}
	switch s.Reason {
	case reasonFailure:
		if ev.commitRefs {
			return ClassUnknown, nil
		}
		return ClassOther, nil
	case reasonServerError, reasonMigrate:
		return ClassUnknown, nil
	case reasonFailedRefs, reasonFailedRef, reasonAtomicFailed, reasonIncorrectOld:
		if m := ev.moved[s.To]; m != nil {
			return ClassBehind, m
		}
		if s.Reason == reasonIncorrectOld {
			// The server's compare-and-swap failed and it did not say why (GitLab):
			// the ref moved after the advertisement. Verified first, like any
			// compare-and-swap failure on the server.
			return ClassBehind, &MovedError{Ref: s.To}
		}
		if l := pickLock(ev.locks, ""); l != nil {
			return lockClass(l), l
		}
		if len(ev.moved) > 0 && s.Reason == reasonAtomicFailed {
			return "", nil // another ref of the atomic push moved
		}
		return ClassOther, nil
	case reasonRefExists:
		// Also a genuine "ref exists" refusal; contention only when the server's
		// message names a lock on this very ref.
		if l := pickLock(ev.locks, s.To); l != nil {
			return lockClass(l), l
		}
		return ClassRejected, nil
	case reasonAtomicPushFailure:
		return "", nil
	}
	switch {
	case rejectedReasons[s.Reason]:
		return ClassRejected, nil
	case declinedReasons[s.Reason]:
		return ClassDeclined, nil
	}
	return ClassOther, nil
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
func forgeRefClass(s RefStatus, ref, inner string) (Class, error) {
	switch {
	case gitmsg.CAS().MatchString(inner):
		m := gitmsg.CAS().FindStringSubmatch(inner)
		return ClassBehind, &MovedError{Ref: ref, Actual: m[1], Expected: m[2]}
	case inner == "reference already exists" || strings.HasPrefix(inner, "unable to resolve reference "):
		return ClassRace, &RejectedError{Ref: s.To, From: s.From, Reason: s.Reason, Remote: true}
	case gitmsg.Exists().MatchString(inner):
		return ClassLockContention, &LockedError{Ref: ref, Lock: gitmsg.Exists().FindStringSubmatch(inner)[1], Remote: true}
	}
	return ClassRejected, nil
}

// refReason is the reason of the ref that decided e's class.
func refReason(e *Error) string {
	var r *RejectedError
	if errors.As(e.Cause, &r) {
		return r.Reason
	}
	return ""
}

// pickLock returns the server's lock failure for ref ("" for any), preferring a
// stale one, which must stop the retries.
func pickLock(locks []*LockedError, ref string) *LockedError {
	var found *LockedError
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

func lockClass(l *LockedError) Class {
	if l.Stale {
		return ClassStaleLock
	}
	return ClassLockContention
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

// transportFailure looks for a transport failure in git's own stderr lines. auth is
// true for an authentication or permission failure, which wins over anything else.
func transportFailure(stderr []byte) (te *TransportError, auth bool) {
	t := gitmsg.ReadTransport(stderr)
	if t.Line != "" {
		te = &TransportError{HTTPStatus: t.HTTPStatus, Message: t.Line, Wait: t.RetryAfter}
	}
	return te, t.Auth
}
