package main

import (
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The fetch part of a round. A bare remote (same git and backend) has branches
// b1…bn; a setup fetch copies them into refs/remotes/soak/, then the remote moves
// (fast-forwards, rewinds, deletions, new branches) and stays still. During the
// round, 2–6 `refretry fetch` processes from it start alongside the update-ref
// invocations. They all want the same values, so they race each other for the
// tracking refs' locks and lose compare-and-swaps to each other, besides meeting
// reftable's lock, packed-refs.lock and pack-refs of the rest of the round. A
// remote that moved during the round would leave the final values undecidable: git
// fetch reads the local old value after the remote's, so an older fetch may
// legitimately overwrite a newer one.

// remoteName is the configured remote; its default refspec fetches into
// refs/remotes/soak/.
const remoteName = "soak"

// forcedSpec is the refspec of the forms that name the remote by its path.
const forcedSpec = "+refs/heads/*:refs/remotes/soak/*"

// branch is one of the remote's branches.
type branch struct {
	name string // b1, b2, …
	// before is its value at the setup fetch, after its value during the round; ""
	// when it does not exist then.
	before, after string
}

// fetchInv is one `refretry fetch` process.
type fetchInv struct {
	id    int
	form  string // fetch, fetch-prune, fetch-atomic, fetch-url, fetch-stdin, fetch-rewind, fetch-missing
	delay int    // milliseconds after the round starts

	code           int
	stdout, stderr string
}

// remote is a round's remote and the fetches from it.
type remote struct {
	dir      string
	branches []*branch // b1 first: the remote's HEAD, never deleted
	rewound  *branch   // a branch moved back, fetched by fetch-rewind; nil when none
	fetches  []*fetchInv
	// outside is every ref outside refs/soak/ just before the round.
	outside map[string]refState
}

// defaultForms are the forms that fetch every branch and must succeed.
var defaultForms = []string{"fetch", "fetch-prune", "fetch-atomic", "fetch-url", "fetch-stdin"}

// createsHEAD reports whether the fetch uses the configured remote's default
// refspec, with which git 2.48+ creates refs/remotes/soak/HEAD.
func (f *fetchInv) createsHEAD() bool {
	return f.form == "fetch" || f.form == "fetch-prune" || f.form == "fetch-atomic"
}

// args are the fetch's arguments after `refretry … fetch`.
func (f *fetchInv) args(rm *remote) []string {
	switch f.form {
	case "fetch-prune":
		return []string{"--prune", remoteName}
	case "fetch-atomic":
		return []string{"--atomic", remoteName}
	case "fetch-url":
		return []string{rm.dir, forcedSpec}
	case "fetch-stdin":
		return []string{"--stdin", rm.dir}
	case "fetch-rewind":
		b := rm.rewound.name
		return []string{rm.dir, "refs/heads/" + b + ":refs/remotes/soakff/" + b}
	case "fetch-missing":
		return []string{rm.dir, "refs/heads/nosuch:refs/remotes/soak/nosuch"}
	}
	return []string{remoteName}
}

func (f *fetchInv) input() string {
	if f.form == "fetch-stdin" {
		return forcedSpec + "\n"
	}
	return ""
}

// want is the exit code the fetch must end with, and for a failure a text its
// stderr must hold: a rewind into a ref without "+" is rejected, a missing remote
// ref is not found; neither is worth retrying.
func (f *fetchInv) want() (int, string) {
	switch f.form {
	case "fetch-rewind":
		return 1, "(non-fast-forward)"
	case "fetch-missing":
		return 128, "fatal: couldn't find remote ref refs/heads/nosuch"
	}
	return 0, ""
}

// newRemote makes the round's remote next to r, fetches it once, moves it, and
// draws the round's fetches.
func newRemote(cfg config, root string, r *repo, rng *rand.Rand) (*remote, error) {
	rm := &remote{dir: filepath.Join(root, "remote.git")}
	g := &repo{git: cfg.git, dir: rm.dir, env: r.env}
	args := []string{"init", "-q", "--bare", "-b", "main"}
	if cfg.backend == "reftable" {
		args = append(args, "--ref-format=reftable")
	}
	if _, err := (&repo{git: cfg.git, dir: root, env: r.env}).run("", append(args, rm.dir)...); err != nil {
		return nil, err
	}

	// Each branch has a line of three commits c0←c1←c2 of its own, kept by
	// refs/pool/<branch>. A branch starts at c1 and moves on to c2, back to c0, away,
	// or stays; a new one appears at c1, so the round's fetches transfer objects.
	n := 3 + rng.Intn(6)
	var fi strings.Builder
	for i := range 3 * n {
		msg := fmt.Sprintf("remote b%d %d\n", i/3+1, i%3)
		fmt.Fprintf(&fi, "commit refs/pool/b%d\nmark :%d\ncommitter C O Mitter <committer@example.com> 1700000000 +0000\ndata %d\n%s", i/3+1, i+1, len(msg), msg)
		if i%3 > 0 {
			fmt.Fprintf(&fi, "from :%d\n", i)
		}
		fi.WriteString("\n")
	}
	marks := filepath.Join(root, "remote-marks")
	if _, err := g.run(fi.String(), "fast-import", "--quiet", "--export-marks="+marks); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(marks)
	if err != nil {
		return nil, err
	}
	c := make([]string, 3*n)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var i int
		var oid string
		if _, err := fmt.Sscanf(line, ":%d %s", &i, &oid); err != nil || i < 1 || i > 3*n {
			return nil, fmt.Errorf("marks line %q", line)
		}
		c[i-1] = oid
	}
	var setup, move strings.Builder
	for i := range n {
		br := &branch{name: fmt.Sprintf("b%d", i+1), before: c[3*i+1], after: c[3*i+1]}
		m := rng.Intn(5)
		if i == 0 {
			m = rng.Intn(2)
		}
		switch m {
		case 1:
			br.after = c[3*i+2]
		case 2:
			br.after = c[3*i]
			rm.rewound = br
		case 3:
			br.after = ""
		case 4:
			br.before = ""
		}
		rm.branches = append(rm.branches, br)
	}
	for _, br := range rm.branches {
		ref := "refs/heads/" + br.name
		switch {
		case br.before != "":
			fmt.Fprintf(&setup, "create %s %s\n", ref, br.before)
			if br.after == "" {
				fmt.Fprintf(&move, "delete %s %s\n", ref, br.before)
			} else if br.after != br.before {
				fmt.Fprintf(&move, "update %s %s %s\n", ref, br.after, br.before)
			}
		default:
			fmt.Fprintf(&move, "create %s %s\n", ref, br.after)
		}
	}
	if _, err := g.run(setup.String(), "update-ref", "--stdin"); err != nil {
		return nil, err
	}
	if _, err := g.run("", "symbolic-ref", "HEAD", "refs/heads/b1"); err != nil {
		return nil, err
	}

	// The setup fetch names the remote by its path, so that no refs/remotes/soak/HEAD
	// exists yet: the round's fetches race to create it.
	if _, err := r.run("", "remote", "add", remoteName, rm.dir); err != nil {
		return nil, err
	}
	// Every fetch starts `git maintenance run --auto`. On the files backend git
	// 2.55's runs `pack-refs --all --prune --auto`, which reads the loose refs before
	// it takes packed-refs.lock: when it waits for the lock while another pack-refs
	// packs and prunes newer values, it then packs the old ones, and a ref goes back
	// to a value it held before (plain git, no refretry involved). The soak would
	// blame refretry for that, so files repositories run no auto-maintenance (2.39's
	// is a gc --auto below its thresholds here anyway); on reftable it compacts the
	// stack alongside the writers.
	if cfg.backend == "files" {
		if _, err := r.run("", "config", "maintenance.auto", "false"); err != nil {
			return nil, err
		}
	}
	if _, err := r.run("", "fetch", "-q", rm.dir, forcedSpec); err != nil {
		return nil, err
	}
	if rm.rewound != nil {
		if _, err := r.run("", "update-ref", "-m", "setup", "refs/remotes/soakff/"+rm.rewound.name, rm.rewound.before); err != nil {
			return nil, err
		}
	}
	if _, err := g.run(move.String(), "update-ref", "--stdin"); err != nil {
		return nil, err
	}
	// Half the rounds start with every ref packed: fetches then update and prune
	// packed tracking refs.
	if rng.Intn(2) == 0 {
		if _, err := r.run("", "pack-refs", "--all"); err != nil {
			return nil, err
		}
	}

	forms := slices.Clone(defaultForms)
	forms = append(forms, "fetch-missing")
	if rm.rewound != nil {
		forms = append(forms, "fetch-rewind")
	}
	for i := range 2 + rng.Intn(5) {
		f := &fetchInv{id: i + 1, delay: rng.Intn(300)}
		if i == 0 { // at least one fetch of every branch
			f.form = defaultForms[rng.Intn(len(defaultForms))]
		} else {
			f.form = forms[rng.Intn(len(forms))]
		}
		rm.fetches = append(rm.fetches, f)
	}
	if rm.outside, err = listRefs(r); err != nil {
		return nil, err
	}
	for name := range rm.outside {
		if strings.HasPrefix(name, "refs/soak/") {
			delete(rm.outside, name)
		}
	}
	return rm, nil
}

// runFetch runs one fetch.
func runFetch(r *repo, refretry string, rm *remote, f *fetchInv) {
	args := append([]string{"--timeout", "60s", "-C", r.dir, "fetch"}, f.args(rm)...)
	f.code, f.stdout, f.stderr = runRefretry(r, refretry, args, f.input())
}

// lockError is reftable's "error: cannot lock references" line, "" when git did not
// print it: a fetch's own transaction found the stack's lock held. Only that line
// is looked for: the auto-maintenance that git fetch starts (2.55: pack-refs)
// reports failures of its own that do not fail the fetch ("unable to compact
// stack: data is locked", "task 'pack-refs' failed", and, pruning loose refs that
// others moved, "cannot lock ref '<ref>': is at …").
func lockError(stderr string) string {
	for line := range strings.Lines(stderr) {
		if line == "error: cannot lock references\n" {
			return strings.TrimSuffix(line, "\n")
		}
	}
	return ""
}

// checkFetches checks the fetches and every ref outside refs/soak/ (which the
// update-ref model checks): each fetch ends as its form must (0 but for the two
// final failures, which are not retried) and prints nothing on stdout; every
// tracking ref of a branch the remote has equals it; a deleted branch's tracking ref
// is gone when a --prune fetch ran and untouched otherwise; on git 2.48+ a fetch
// with the default refspec created refs/remotes/soak/HEAD, pointing at b1's (unless
// every such fetch that succeeded found reftable's lock held when it tried: git
// exits 0 then, without it); no other ref changed, appeared or went away.
func checkFetches(cfg config, rm *remote, after map[string]refState) []string {
	var v []string
	bad := func(format string, a ...any) { v = append(v, fmt.Sprintf(format, a...)) }
	pruned, head, headMayLack := false, false, false
	for _, f := range rm.fetches {
		pruned = pruned || f.form == "fetch-prune"
		head = head || f.createsHEAD()
		if f.stdout != "" {
			bad("fetch-%d (%s): unexpected stdout %q", f.id, f.form, f.stdout)
		}
		code, sign := f.want()
		switch {
		case f.code != code:
			bad("fetch-%d (%s): exit %d, want %d: %s", f.id, f.form, f.code, code, lastLines(f.stderr))
		case !strings.Contains(f.stderr, sign):
			bad("fetch-%d (%s): failed, but stderr does not say %q: %s", f.id, f.form, sign, lastLines(f.stderr))
		case f.code == 0 && lockError(f.stderr) != "":
			// git fetch exits 0 when it could not create the remote's HEAD for a
			// held lock (reftable: "cannot lock references"). refretry keeps git's
			// success (docs/fetch.md): the remote's HEAD may then be missing, and
			// nothing else.
			headMayLack = headMayLack || f.createsHEAD()
		}
	}

	want := maps.Clone(rm.outside)
	for _, br := range rm.branches {
		name := "refs/remotes/soak/" + br.name
		switch {
		case br.after != "":
			want[name] = refState{oid: br.after}
		case pruned:
			delete(want, name)
		}
	}
	if cfg.remoteHEAD && head {
		want["refs/remotes/soak/HEAD"] = refState{oid: rm.branches[0].after, symTo: "refs/remotes/soak/b1"}
		if _, ok := after["refs/remotes/soak/HEAD"]; !ok && headMayLack {
			delete(want, "refs/remotes/soak/HEAD")
		}
	}
	for _, name := range slices.Sorted(maps.Keys(want)) {
		got, ok := after[name]
		switch {
		case !ok:
			bad("%s: missing, want %v", name, want[name])
		case got != want[name]:
			bad("%s: %v, want %v", name, got, want[name])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(after)) {
		if _, ok := want[name]; !ok && !strings.HasPrefix(name, "refs/soak/") {
			bad("%s: %v, a ref that should not exist", name, after[name])
		}
	}
	return v
}
