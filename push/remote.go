package push

import (
	"fmt"
	"strings"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/gitmsg"
)

// remoteLines returns the server's messages: the text after "remote: " on each
// stderr line, without the padding (8 spaces, or an erase-line sequence on a
// terminal) that git adds after it.
func remoteLines(stderr []byte) []string {
	var out []string
	for _, line := range strings.Split(string(stderr), "\n") {
		line = strings.TrimSuffix(line, "\r")
		rest, ok := strings.CutPrefix(line, "remote:")
		if !ok {
			continue
		}
		rest = strings.TrimPrefix(rest, " ")
		rest = strings.TrimSuffix(rest, "\x1b[K")
		out = append(out, strings.TrimRight(rest, " "))
	}
	return out
}

// evidence is what the server's remote: lines say about its ref updates.
type evidence struct {
	// locks are the lock failures: reftable's "cannot lock references", and
	// lockfile.c's "Unable to create '….lock': File exists." followed by one of its
	// advice texts. A lock message without known advice is not evidence.
	locks []*failure.Lock
	// moved are refs whose compare-and-swap failed on the server ("cannot lock ref
	// '<ref>': is at X but expected Y"): another push moved them after the
	// advertisement this push was based on.
	moved map[string]*failure.Moved
	// commitRefs is GitHub's "fatal error in commit_refs": its backend failed to
	// commit, and whether any ref changed is not known.
	commitRefs bool
	// refDeleted is the server's connectivity check dying on one of its own refs
	// ("fatal: bad object refs/…"): on the files backend, git 2.55's receive-pack
	// hands the check a loose ref that another process deleted while it listed them.
	// The check runs before any ref is updated.
	refDeleted bool
	// policy is what the server said about a refusal: its lines from the first
	// error or forge message on, without blank lines, bare "error:" lines and the
	// "error: " prefix (GH006/GH013, "GitLab: …", a pre-receive hook's output).
	policy []string
}

// Bounds on what a server's policy text may add to refretry's own line.
const (
	maxPolicyLines = 12
	maxPolicyBytes = 2000
)

// policyLine reports whether line starts the text of a refusal.
func policyLine(line string) bool {
	return strings.HasPrefix(line, "error:") || strings.HasPrefix(line, "GitLab:") || strings.HasPrefix(line, "fatal:")
}

// remoteEvidence reads the server's lines in stderr.
func remoteEvidence(stderr []byte) evidence {
	lines := remoteLines(stderr)
	var ev evidence
	size := 0
	for i, line := range lines {
		if len(ev.policy) > 0 || policyLine(line) {
			text := strings.TrimSpace(strings.TrimPrefix(line, "error:"))
			if text != "" && len(ev.policy) < maxPolicyLines && size+len(text) <= maxPolicyBytes {
				ev.policy = append(ev.policy, text)
				size += len(text)
			}
		}
		if line == "fatal error in commit_refs" {
			ev.commitRefs = true
			continue
		}
		if strings.HasPrefix(line, "fatal: bad object refs/") {
			ev.refDeleted = true
			continue
		}
		msg, ok := strings.CutPrefix(line, "error: ")
		if !ok {
			continue
		}
		if msg == "cannot lock references" {
			ev.locks = append(ev.locks, &failure.Lock{Remote: true})
			continue
		}
		msg, ref := gitmsg.StripCannotLockRef(msg)
		if m := gitmsg.CAS().FindStringSubmatch(msg); m != nil && ref != "" {
			if ev.moved == nil {
				ev.moved = map[string]*failure.Moved{}
			}
			ev.moved[ref] = &failure.Moved{Ref: ref, Actual: m[1], Expected: m[2]}
			continue
		}
		m := gitmsg.Exists().FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		l := &failure.Lock{Ref: ref, Path: m[1], Remote: true}
		// More remote: lines may follow the advice (other refs, the hook's output).
		switch kind, pid, _ := gitmsg.ReadAdvice(lines[i+1:]); kind {
		case gitmsg.AdviceLive:
			l.PID = pid
		case gitmsg.AdviceDead:
			l.PID, l.Stale = pid, true
			l.StaleReason = fmt.Sprintf("its holder, process %d, is gone", pid)
		default:
			continue
		}
		ev.locks = append(ev.locks, l)
	}
	return ev
}
