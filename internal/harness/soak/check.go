package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// refState is a ref as found after a round.
type refState struct {
	oid   string // what it resolves to
	symTo string // its target when it is a symref
}

// logEntry is one reflog entry: the value written and the invocation that wrote it.
type logEntry struct{ new, msg string }

type state struct {
	refs      map[string]refState
	reflogs   map[string][]logEntry // oldest first
	strayLogs []string              // files backend: reflogs of refs that do not exist
}

// readState reads every ref under refs/soak/ and the reflogs the model checks.
func readState(r *repo, p *plan) (*state, error) {
	refs, err := listRefs(r, "refs/soak/")
	if err != nil {
		return nil, err
	}
	st := &state{refs: refs, reflogs: map[string][]logEntry{}}
	for _, rp := range p.refs {
		switch rp.kind {
		case kCreate, kShared, kChain, kTarget, kExists:
		default:
			continue
		}
		if _, ok := st.refs[rp.name]; !ok {
			if _, err := os.Stat(filepath.Join(r.dir, ".git", "logs", filepath.FromSlash(rp.name))); !errors.Is(err, os.ErrNotExist) {
				st.strayLogs = append(st.strayLogs, rp.name)
			}
			continue
		}
		out, err := r.run("", "reflog", "show", "--format=%H%x09%gs", rp.name)
		if err != nil {
			return nil, err
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var entries []logEntry
		for i := len(lines) - 1; i >= 0; i-- {
			if lines[i] == "" {
				continue
			}
			oid, msg, _ := strings.Cut(lines[i], "\t")
			entries = append(entries, logEntry{oid, msg})
		}
		st.reflogs[rp.name] = entries
	}
	return st, nil
}

// listRefs lists the refs under the patterns (every ref when none is given).
func listRefs(r *repo, patterns ...string) (map[string]refState, error) {
	out, err := r.run("", append([]string{"for-each-ref", "--format=%(refname)%09%(objectname)%09%(symref)"}, patterns...)...)
	if err != nil {
		return nil, err
	}
	refs := map[string]refState{}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("for-each-ref line %q", line)
		}
		refs[f[0]] = refState{oid: f[1], symTo: f[2]}
	}
	return refs, nil
}

// check compares the final state with the model and returns every violation.
func check(p *plan, st *state) []string {
	var v []string
	bad := func(format string, a ...any) { v = append(v, fmt.Sprintf(format, a...)) }
	ok := (*op).applied

	for _, inv := range p.invs {
		if inv.batchUpdates() {
			checkBatch(inv, bad)
			continue
		}
		if inv.stdout != "" {
			bad("inv-%d (%s): unexpected stdout %q", inv.id, inv.form, inv.stdout)
		}
		mustFail, mayFail := false, false
		for _, o := range inv.ops {
			mustFail = mustFail || o.mustFail
			mayFail = mayFail || o.mayFail
		}
		switch {
		case mustFail && inv.code == 0:
			bad("inv-%d (%s): succeeded although it expected a value its ref never held", inv.id, inv.form)
		case !mustFail && !mayFail && inv.code != 0:
			bad("inv-%d (%s): failed with nothing in the way (exit %d): %s", inv.id, inv.form, inv.code, lastLines(inv.stderr))
		case inv.code != 0 && inv.code != 128 && !(inv.form == "delete" && inv.code == 1):
			bad("inv-%d (%s): exit %d: %s", inv.id, inv.form, inv.code, lastLines(inv.stderr))
		}
	}

	known := map[string]bool{}
	for _, rp := range p.refs {
		known[rp.name] = true
		got, exists := st.refs[rp.name]
		switch rp.kind {
		case kCreate, kShared, kChain, kTarget, kExists:
			checkWritten(rp, got, exists, st.reflogs[rp.name], bad, ok)
		case kDelete:
			o := rp.ops[0]
			switch {
			case ok(o) && exists:
				bad("%s: inv-%d deleted it, but it is still there (%v)", rp.name, o.inv.id, got)
			case !ok(o) && (!exists || got.oid != rp.initial || got.symTo != ""):
				bad("%s: inv-%d failed, yet the ref changed: %v (exists %v), want %s", rp.name, o.inv.id, got, exists, rp.initial)
			}
		case kSymCreate, kSymUpdate:
			o := rp.ops[0]
			want, wantExists := rp.symTo, rp.kind == kSymUpdate
			if ok(o) {
				want, wantExists = o.new, true
			}
			if exists != wantExists || exists && got.symTo != want {
				bad("%s: inv-%d exit %d, want symref to %q (exists %v), got %v (exists %v)", rp.name, o.inv.id, o.inv.code, want, wantExists, got, exists)
			}
		case kNoDeref:
			o := rp.ops[0]
			if ok(o) && (!exists || got.symTo != "" || got.oid != o.new) {
				bad("%s: inv-%d updated it with --no-deref, got %v (exists %v), want a plain ref at %s", rp.name, o.inv.id, got, exists, o.new)
			}
			if !ok(o) && (!exists || got.symTo != rp.symTo) {
				bad("%s: inv-%d failed, yet the symref changed: %v (exists %v)", rp.name, o.inv.id, got, exists)
			}
		}
	}
	for name := range st.refs {
		if !known[name] {
			bad("%s: a ref nobody wrote", name)
		}
	}
	for _, name := range st.strayLogs {
		bad("%s: a reflog for a ref that does not exist", name)
	}
	return v
}

// readReport reads a --batch-updates invocation's report, marking the ops it
// rejected, and returns what is wrong with the report itself. git prints one
// "rejected <ref> <new> <old> <reason>" line per rejected update on stdout, and
// refretry keeps them in input order.
func readReport(inv *invocation) []string {
	var bad []string
	byRef := map[string]int{}
	for i, o := range inv.ops {
		byRef[o.ref.name] = i
	}
	last := -1
	for line := range strings.Lines(inv.stdout) {
		f := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 5)
		if len(f) != 5 || f[0] != "rejected" {
			bad = append(bad, fmt.Sprintf("unexpected stdout line %q", line))
			continue
		}
		i, ok := byRef[f[1]]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("rejects %s, which it does not update: %q", f[1], line))
			continue
		case inv.ops[i].rejected:
			bad = append(bad, fmt.Sprintf("rejects %s twice", f[1]))
			continue
		case i < last:
			bad = append(bad, fmt.Sprintf("rejection of %s is out of input order", f[1]))
		}
		last = i
		inv.ops[i].rejected, inv.ops[i].reason = true, f[4]
	}
	return bad
}

// checkBatch checks a --batch-updates invocation: it exits 0; its report rejects
// exactly the ops that had to fail, each for its real reason, and no op whose only
// obstacle could have been a lock another writer held (refretry resubmits those);
// it may reject a CAS step that lost its race, for its old value; every rejection
// has git's error detail, naming the ref, on stderr.
func checkBatch(inv *invocation, bad func(string, ...any)) {
	for _, msg := range readReport(inv) {
		bad("inv-%d (%s): %s", inv.id, inv.form, msg)
	}
	if inv.code != 0 {
		bad("inv-%d (%s): exit %d: %s", inv.id, inv.form, inv.code, lastLines(inv.stderr))
		return
	}
	for _, o := range inv.ops {
		switch {
		case o.mustFail && !o.rejected:
			bad("inv-%d (%s): accepted %s %s, which had to be rejected (%s)", inv.id, inv.form, o.verb, o.ref.name, o.wantReason())
		case o.rejected && !o.mustFail && !o.mayFail:
			bad("inv-%d (%s): rejected %s %s with nothing in the way (%s): %s", inv.id, inv.form, o.verb, o.ref.name, o.reason, detail(inv.stderr, o.ref.name))
		case o.rejected && o.reason != o.wantReason():
			bad("inv-%d (%s): rejected %s %s for %q, want %q: %s", inv.id, inv.form, o.verb, o.ref.name, o.reason, o.wantReason(), detail(inv.stderr, o.ref.name))
		case o.rejected && !strings.Contains(inv.stderr, "'"+o.ref.name+"'"):
			bad("inv-%d (%s): rejected %s, but stderr has no detail naming it", inv.id, inv.form, o.ref.name)
		case o.rejected && o.ref.kind == kExists && !strings.Contains(inv.stderr, "cannot lock ref '"+o.ref.name+"': reference already exists\n"):
			// A held lock is reported with the same reason; only the detail tells.
			bad("inv-%d (%s): rejected the create of existing %s, but not because it exists: %s", inv.id, inv.form, o.ref.name, detail(inv.stderr, o.ref.name))
		}
	}
}

// detail is the first stderr line that names ref.
func detail(stderr, ref string) string {
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, "'"+ref+"'") {
			return strings.TrimSuffix(line, "\n")
		}
	}
	return "(none)"
}

// checkWritten checks a regular ref written by plain and CAS updates: its reflog,
// after the setup entry, holds exactly one entry per operation that was applied
// (its invocation succeeded and did not reject it), each with that operation's value; each CAS found its expected value;
// the ref ends at the last value written; failed invocations left no trace.
func checkWritten(rp *refPlan, got refState, exists bool, log []logEntry, bad func(string, ...any), ok func(*op) bool) {
	// Every value written in a round is distinct, so an entry's value names its
	// operation; its message must then be that operation's invocation's.
	byNew := map[string]*op{}
	applied := 0
	for _, o := range rp.ops {
		byNew[o.new] = o
		if ok(o) {
			applied++
		}
	}
	if rp.initial == "" && applied == 0 {
		if exists {
			bad("%s: no invocation that wrote it succeeded, yet it exists: %v", rp.name, got)
		}
		return
	}
	if !exists || got.symTo != "" {
		bad("%s: want a plain ref, got %v (exists %v)", rp.name, got, exists)
		return
	}
	cur := rp.initial
	if rp.initial != "" {
		if len(log) == 0 || log[0].msg != "setup" || log[0].new != rp.initial {
			bad("%s: reflog does not start with the setup entry: %v", rp.name, log)
			return
		}
		log = log[1:]
	}
	seen := map[*op]bool{}
	for i, e := range log {
		o := byNew[e.new]
		switch {
		case o == nil:
			bad("%s: reflog entry %d %v was written by no operation on this ref", rp.name, i, e)
		case !ok(o):
			bad("%s: reflog entry %d %v is from inv-%d, which %s", rp.name, i, e, o.inv.id, o.outcome())
		case seen[o]:
			bad("%s: reflog has inv-%d's update twice", rp.name, o.inv.id)
		case e.msg != o.inv.msg():
			bad("%s: reflog entry %d from inv-%d has message %q, want %q", rp.name, i, o.inv.id, e.msg, o.inv.msg())
		case o.old != "" && o.old != cur:
			bad("%s: inv-%d expected %s and was applied when the ref was at %s", rp.name, o.inv.id, o.old, cur)
		}
		if o != nil {
			seen[o] = true
		}
		cur = e.new
	}
	for _, o := range rp.ops {
		if ok(o) && !seen[o] {
			bad("%s: inv-%d reported success, but its update is not in the reflog", rp.name, o.inv.id)
		}
	}
	if got.oid != cur {
		bad("%s: holds %s (%s), but the last value written is %s", rp.name, got.oid, whose(rp, got.oid, byNew), cur)
	}
}

// whose says where a value a ref holds came from: its setup, or an operation.
func whose(rp *refPlan, oid string, byNew map[string]*op) string {
	if oid == rp.initial {
		return "its setup value"
	}
	if o := byNew[oid]; o != nil {
		if o.applied() {
			return fmt.Sprintf("written by inv-%d, which succeeded", o.inv.id)
		}
		return fmt.Sprintf("the value of inv-%d, which %s", o.inv.id, o.outcome())
	}
	return "no operation's value"
}

func lastLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}
