package main

import (
	"fmt"
	"math/rand"
	"strings"
)

// config is one repository flavour the soak rotates through.
type config struct {
	name       string
	git        string
	backend    string // "files" or "reftable"
	symrefCmds bool   // the symref-* --stdin commands exist (2.46+)
	// batchUpdates: update-ref --batch-updates exists (2.50+).
	batchUpdates bool
	// remoteHEAD: a fetch from a configured remote with its default refspec creates
	// refs/remotes/<remote>/HEAD (remote.<name>.followRemoteHEAD, 2.48+).
	remoteHEAD bool
}

// kind is how a ref is used in a round. Each kind keeps the model decidable: the ref
// is written by a known set of operations whose values are all distinct.
type kind int

const (
	kCreate    kind = iota // absent; one create
	kShared                // exists; 2–5 concurrent plain updates
	kChain                 // exists; a CAS chain v0→v1→…, maybe a fork from v0, maybe wrong-old CASes
	kDelete                // exists; one delete with the right old value, none, or a wrong one
	kSymCreate             // absent; one symref-create
	kSymUpdate             // a symref; one symref-update with the right or a wrong old target
	kNoDeref               // a symref to its own target ref; one --no-deref update of the symref itself
	kTarget                // the target of a kNoDeref symref: written by nobody
	kExists                // exists; one create, which must fail
)

var kindNames = map[kind]string{kCreate: "create", kShared: "shared", kChain: "chain", kDelete: "delete",
	kSymCreate: "symref-create", kSymUpdate: "symref-update", kNoDeref: "no-deref", kTarget: "target", kExists: "exists"}

type refPlan struct {
	name    string
	kind    kind
	initial string // initial oid of a regular ref; "" when absent or a symref
	symTo   string // initial target of a symref
	ops     []*op
}

// op is one ref operation; every op belongs to exactly one invocation.
type op struct {
	ref      *refPlan
	verb     string // update, create, delete, symref-create, symref-update, nd-update
	new      string // oid, or target ref for symref verbs
	old      string // expected old oid or target; "" when not given
	mustFail bool   // old is a value the ref never holds
	mayFail  bool   // a CAS step that may legitimately lose its race
	inv      *invocation

	// With --batch-updates: rejected says the invocation's report rejected the op,
	// for reason.
	rejected bool
	reason   string
}

// applied reports whether the op took effect, as far as its invocation reported:
// the invocation succeeded and, with --batch-updates, did not reject it.
func (o *op) applied() bool { return o.inv.code == 0 && !o.rejected }

// outcome says why an op that was not applied was not: "failed (exit N)", or
// "rejected it (reason)".
func (o *op) outcome() string {
	if o.rejected {
		return fmt.Sprintf("rejected it (%s)", o.reason)
	}
	return fmt.Sprintf("failed (exit %d)", o.inv.code)
}

// wantReason is the reason --batch-updates must give when it rejects o: only the
// create of a ref that exists is rejected for another reason than its old value.
func (o *op) wantReason() string {
	if o.ref.kind == kExists {
		return "reference already exists"
	}
	return "incorrect old value provided"
}

// invocation is one refretry process.
type invocation struct {
	id    int
	form  string // single, delete, no-deref, stdin, stdin-z, batch, batch-z
	ops   []*op
	delay int // milliseconds after the round starts
	// coalesce runs a one-ref invocation with --coalesce, under a message it shares
	// with the other coalesced ones (a group commit shares one -m).
	coalesce bool

	code           int
	stdout, stderr string
}

// batchUpdates reports whether the invocation runs with --stdin --batch-updates.
func (inv *invocation) batchUpdates() bool { return inv.form == "batch" || inv.form == "batch-z" }

func (inv *invocation) msg() string {
	if inv.coalesce {
		return "coalesced"
	}
	return fmt.Sprintf("inv-%d", inv.id)
}

// args are refretry's arguments after its own options.
func (inv *invocation) args() []string {
	a := []string{"-m", inv.msg()}
	o := inv.ops[0]
	switch inv.form {
	case "single":
		a = append(a, o.ref.name, o.new)
		if o.verb == "create" {
			a = append(a, strings.Repeat("0", 40))
		} else if o.old != "" {
			a = append(a, o.old)
		}
	case "delete":
		a = append(a, "-d", o.ref.name)
		if o.old != "" {
			a = append(a, o.old)
		}
	case "no-deref":
		a = append(a, "--no-deref", o.ref.name, o.new)
	case "stdin":
		a = append(a, "--stdin")
	case "stdin-z":
		a = append(a, "--stdin", "-z")
	case "batch":
		a = append(a, "--stdin", "--batch-updates")
	case "batch-z":
		a = append(a, "--stdin", "-z", "--batch-updates")
	}
	return a
}

// input is the --stdin input of a batch.
func (inv *invocation) input() string {
	z := inv.form == "stdin-z" || inv.form == "batch-z"
	var b strings.Builder
	line := func(fields ...string) {
		if !z {
			b.WriteString(strings.Join(fields, " ") + "\n")
			return
		}
		// -z: "<cmd> SP <ref>" NUL, then each further field NUL-terminated.
		b.WriteString(fields[0])
		if len(fields) > 1 {
			b.WriteString(" " + fields[1])
		}
		b.WriteByte(0)
		for _, f := range fields[2:] {
			b.WriteString(f)
			b.WriteByte(0)
		}
	}
	for _, o := range inv.ops {
		switch o.verb {
		case "update":
			if z || o.old != "" {
				line("update", o.ref.name, o.new, o.old)
			} else {
				line("update", o.ref.name, o.new)
			}
		case "create":
			line("create", o.ref.name, o.new)
		case "delete":
			if z || o.old != "" {
				line("delete", o.ref.name, o.old)
			} else {
				line("delete", o.ref.name)
			}
		case "nd-update":
			line("option", "no-deref")
			if z {
				line("update", o.ref.name, o.new, "")
			} else {
				line("update", o.ref.name, o.new)
			}
		case "symref-create":
			line("symref-create", o.ref.name, o.new)
		case "symref-update":
			line("option", "no-deref")
			line("symref-update", o.ref.name, o.new, "ref", o.old)
		}
	}
	return b.String()
}

// plan is a round's workload.
type plan struct {
	refs []*refPlan
	invs []*invocation
	ops  int
}

// makePlan draws a workload from rng. take returns a commit nobody has used yet.
func makePlan(rng *rand.Rand, cfg config, maxOps int, coalesce bool, take func() string) *plan {
	p := &plan{}
	n := 0
	newRef := func(k kind) *refPlan {
		n++
		r := &refPlan{name: fmt.Sprintf("refs/soak/%s/%d", kindNames[k], n), kind: k}
		p.refs = append(p.refs, r)
		return r
	}
	var ops []*op
	add := func(r *refPlan, o *op) {
		o.ref = r
		r.ops = append(r.ops, o)
		ops = append(ops, o)
	}
	budget := maxOps/4 + rng.Intn(maxOps*3/4+1)
	for len(ops) < budget {
		switch k := rng.Intn(11); {
		case k < 3:
			add(newRef(kCreate), &op{verb: "create", new: take()})
		case k < 4:
			r := newRef(kShared)
			r.initial = take()
			for range 2 + rng.Intn(4) {
				add(r, &op{verb: "update", new: take()})
			}
		case k < 6:
			r := newRef(kChain)
			r.initial = take()
			prev := r.initial
			for range 1 + rng.Intn(4) {
				next := take()
				add(r, &op{verb: "update", new: next, old: prev, mayFail: true})
				prev = next
			}
			if rng.Intn(2) == 0 { // a competitor for the first step
				add(r, &op{verb: "update", new: take(), old: r.initial, mayFail: true})
			}
			for range rng.Intn(3) { // expects a value the ref never holds
				add(r, &op{verb: "update", new: take(), old: take(), mustFail: true})
			}
		case k < 8:
			r := newRef(kDelete)
			r.initial = take()
			switch rng.Intn(4) {
			case 0, 1:
				add(r, &op{verb: "delete", old: r.initial})
			case 2:
				add(r, &op{verb: "delete"})
			default:
				add(r, &op{verb: "delete", old: take(), mustFail: true})
			}
		case k == 10:
			r := newRef(kExists)
			r.initial = take()
			add(r, &op{verb: "create", new: take(), mustFail: true})
		case k < 9 && cfg.symrefCmds:
			if rng.Intn(2) == 0 {
				add(newRef(kSymCreate), &op{verb: "symref-create", new: "refs/heads/main"})
				continue
			}
			r := newRef(kSymUpdate)
			r.symTo = "refs/heads/main"
			if rng.Intn(3) == 0 {
				add(r, &op{verb: "symref-update", new: "refs/heads/other", old: "refs/heads/wrong", mustFail: true})
			} else {
				add(r, &op{verb: "symref-update", new: "refs/heads/other", old: r.symTo})
			}
		default:
			t := newRef(kTarget)
			t.initial = take()
			r := newRef(kNoDeref)
			r.symTo = t.name
			add(r, &op{verb: "nd-update", new: take()})
		}
	}
	p.ops = len(ops)
	rng.Shuffle(len(ops), func(i, j int) { ops[i], ops[j] = ops[j], ops[i] })

	// Each op goes alone into a single-form invocation, when it has one, or into a
	// --stdin batch of 1–50 ops on distinct refs; on git 2.50+ a third of the batches
	// run with --batch-updates.
	type batch struct {
		inv  *invocation
		cap  int
		refs map[string]bool
	}
	var open []*batch
	newInv := func(form string) *invocation {
		inv := &invocation{id: len(p.invs) + 1, form: form, delay: rng.Intn(300)}
		p.invs = append(p.invs, inv)
		return inv
	}
	for _, o := range ops {
		if rng.Intn(2) == 0 {
			form := map[string]string{"update": "single", "create": "single", "delete": "delete", "nd-update": "no-deref"}[o.verb]
			if form != "" {
				inv := newInv(form)
				inv.ops, o.inv = []*op{o}, inv
				inv.coalesce = coalesce && rng.Intn(2) == 0
				continue
			}
		}
		var fit []*batch
		for _, b := range open {
			if len(b.inv.ops) < b.cap && !b.refs[o.ref.name] {
				fit = append(fit, b)
			}
		}
		var b *batch
		if len(fit) == 0 || rng.Intn(4) == 0 {
			form := "stdin"
			if rng.Intn(2) == 0 {
				form = "stdin-z"
			}
			if cfg.batchUpdates && rng.Intn(3) == 0 {
				form = map[string]string{"stdin": "batch", "stdin-z": "batch-z"}[form]
			}
			b = &batch{inv: newInv(form), cap: 1 + rng.Intn(50), refs: map[string]bool{}}
			open = append(open, b)
		} else {
			b = fit[rng.Intn(len(fit))]
		}
		b.inv.ops = append(b.inv.ops, o)
		b.refs[o.ref.name] = true
		o.inv = b.inv
	}
	return p
}
