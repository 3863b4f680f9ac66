package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// variantNames are the short names of the concurrency variants, in the
// order they are reported. -variants selects among them.
var variantNames = []string{
	"git-files", "git-reftable", "git-locktimeout", "flock", "go-empty",
	"refretry", "refretry-files", "coalesce", "coalesce-files",
	"refretry-nogroup", "go-wrapper-files",
}

// variant is one way of running the concurrent writers.
type variant struct {
	name   string // short and stable, for -variants and the ratios
	label  string // what runs, for the tables
	format string // ref storage format of the repository
	argv   func(dir, ref, oid string) []string
	env    []string // added to the writers' environment
	verify bool     // whether the writers write refs to check afterwards
	skip   string   // why the variant cannot run here; empty when it can
}

// extBins are the programs some variants need besides git and refretry,
// or the reason each is unavailable.
type extBins struct {
	flock, flockErr     string
	empty, emptyErr     string
	wrapper, wrapperErr string
}

// findExtBins looks up flock(1) and builds the empty Go program, each only
// when a selected variant needs it.
func findExtBins(cfg config, dir string) extBins {
	var x extBins
	if cfg.wantsVariant("flock") {
		if p, err := resolveExe("flock"); err != nil {
			x.flockErr = "flock(1) not found: " + err.Error()
		} else {
			x.flock = p
		}
	}
	if cfg.wantsVariant("go-empty") {
		if p, err := buildEmpty(dir); err != nil {
			x.emptyErr = firstLine(err.Error())
		} else {
			x.empty = p
		}
	}
	if cfg.wantsVariant("go-wrapper-files") {
		if p, err := buildFloor(dir); err != nil {
			x.wrapperErr = firstLine(err.Error())
		} else {
			x.wrapper = p
		}
	}
	return x
}

func concurrencyVariants(cfg config, x extBins) []variant {
	git := func(pre ...string) func(dir, ref, oid string) []string {
		return func(_, ref, oid string) []string {
			return append(append([]string{cfg.git}, pre...), "update-ref", ref, oid)
		}
	}
	rr := func(_, ref, oid string) []string { return []string{cfg.refretry, ref, oid} }
	// Switched on through the environment, as a CI system would: a refretry
	// option on the command line costs a parse of refretry's own grammar.
	coalesce := []string{"REFRETRY_COALESCE=1"}
	vs := []variant{
		{name: "git-files", label: "git update-ref, files", format: "files", argv: git(), verify: true},
		{name: "git-reftable", label: "git update-ref, reftable", format: "reftable", argv: git(), verify: true},
		{name: "git-locktimeout", label: "git -c reftable.lockTimeout=5000 update-ref, reftable", format: "reftable",
			argv: git("-c", "reftable.lockTimeout=5000"), verify: true},
		// flock(1) opens a directory read-only and locks it; every writer
		// takes the same lock, so git itself never meets contention.
		{name: "flock", label: "flock(1) .git/reftable + git update-ref, reftable", format: "reftable",
			argv: func(dir, ref, oid string) []string {
				return []string{x.flock, filepath.Join(dir, ".git", "reftable"), cfg.git, "update-ref", ref, oid}
			}, verify: true, skip: x.flockErr},
		{name: "go-empty", label: "empty Go program (writes no ref: the floor of any Go client)", format: "files",
			argv: func(_, ref, oid string) []string { return []string{x.empty, ref, oid} }, skip: x.emptyErr},
		{name: "refretry", label: "refretry, reftable", format: "reftable", argv: rr, verify: true},
		{name: "refretry-files", label: "refretry, files", format: "files", argv: rr, verify: true},
		{name: "coalesce", label: "refretry --coalesce, reftable", format: "reftable", argv: rr, env: coalesce, verify: true},
		{name: "coalesce-files", label: "refretry --coalesce, files", format: "files", argv: rr, env: coalesce, verify: true},
		// Group commit switched off: the retrying path with its line, as when a
		// repository's configuration says no.
		{name: "refretry-nogroup", label: "refretry with REFRETRY_COALESCE=0, reftable", format: "reftable", argv: rr,
			env: []string{"REFRETRY_COALESCE=0"}, verify: true},
		// The least any Go program that starts its own git can cost on the files
		// backend: the floor under refretry-files without group commit.
		{name: "go-wrapper-files", label: "minimal Go wrapper + git update-ref, files", format: "files",
			argv: func(dir, ref, oid string) []string {
				return append([]string{x.wrapper}, git()(dir, ref, oid)...)
			}, verify: true, skip: x.wrapperErr},
	}
	// Other refretry binaries (-concurrency-extra), run as the refretry variant is:
	// an earlier build beside this one, in the same trials.
	for _, e := range cfg.rrExtras {
		vs = append(vs, variant{name: e.label, label: e.label + ", reftable", format: "reftable", verify: true,
			argv: func(_, ref, oid string) []string { return []string{e.path, ref, oid} }})
	}
	return vs
}

// selectedVariants returns the variants -variants asked for, and every
// -concurrency-extra, in report order.
func selectedVariants(cfg config, x extBins) []variant {
	return slices.DeleteFunc(concurrencyVariants(cfg, x), func(v variant) bool {
		return slices.Contains(variantNames, v.name) && !cfg.wantsVariant(v.name)
	})
}

// ratioPairs are the ratios printed for every writer count: numerator
// and denominator by variant name.
var ratioPairs = [][2]string{
	{"refretry", "flock"},
	{"refretry", "git-locktimeout"},
	{"refretry", "go-empty"},
	{"refretry", "git-files"},
	{"refretry-files", "git-files"},
	{"coalesce", "git-files"},
	{"coalesce", "flock"},
	{"coalesce", "refretry"},
	{"coalesce-files", "git-files"},
	{"refretry-nogroup", "flock"},
	{"go-empty", "git-files"},
	{"go-wrapper-files", "git-files"},
	{"flock", "go-empty"},
	{"git-locktimeout", "go-empty"},
}

// extraRatioPairs are the ratios printed for a -concurrency-extra binary.
func extraRatioPairs(label string) [][2]string {
	return [][2]string{{label, "refretry"}, {label, "flock"}, {label, "git-locktimeout"}, {label, "go-empty"}}
}

// trialResult is one variant in one trial.
type trialResult struct {
	wall     time.Duration
	cpu      time.Duration // user+system of the writers and their waited-for descendants, without the gate
	gateCPU  time.Duration // the gates' own time before exec, left out of cpu
	ok       int           // exited 0
	failed   int           // exited non-zero or timed out
	mismatch int           // exited 0 but the ref is missing or wrong
	ghost    int           // exited non-zero but the ref exists anyway
	firstErr string        // first line of the first failure's stderr
}

// variantPoint is one variant's medians at one writer count, for the
// charts.
type variantPoint struct {
	wall, cpu time.Duration
	okPercent float64
}

func runConcurrency(r *runner, cfg config, root string) (string, error) {
	vs := selectedVariants(cfg, findExtBins(cfg, root))
	var active []int // indexes of the variants that run
	for i, v := range vs {
		if v.skip == "" {
			active = append(active, i)
		} else {
			progress("concurrency: skipping %s: %s", v.name, v.skip)
		}
	}
	var b, raw strings.Builder
	b.WriteString("## (a) Concurrency\n\n")
	b.WriteString("N processes start together (held at a shared gate, then released at once), each updating its own `refs/heads/w/<i>` " +
		"in a fresh one-commit repository. Wall time runs from the release to the last exit. " +
		"CPU is user+system time of the N processes and every descendant they waited for (wait4), " +
		"without the gate's own time before exec. " +
		"The variants run interleaved within every trial, in an order rotated by trial.\n\n")
	raw.WriteString("### Raw trials\n\n| writers | trial | variant | wall (s) | CPU (s) | gate CPU (s, not counted) | ok | failed | mismatches | written despite failure |\n" +
		"|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|\n")
	points := make([][]variantPoint, len(vs))
	for _, n := range cfg.writers {
		results := make([][]trialResult, len(vs))
		for t := range cfg.trials {
			for k := range active {
				i := active[(t+k)%len(active)]
				v := vs[i]
				res, err := concurrencyTrial(r, root, v, n)
				if err != nil {
					return b.String(), fmt.Errorf("%d writers, %s: %w", n, v.name, err)
				}
				progress("concurrency n=%d trial %d/%d %s: %s s wall, %s s CPU, %d/%d ok",
					n, t+1, cfg.trials, v.name, seconds(res.wall), seconds(res.cpu), res.ok, n)
				results[i] = append(results[i], res)
				fmt.Fprintf(&raw, "| %d | %d | %s | %s | %s | %s | %d | %d | %s | %s |\n",
					n, t+1, v.name, seconds(res.wall), seconds(res.cpu), seconds(res.gateCPU), res.ok, res.failed,
					checked(v, res.mismatch), checked(v, res.ghost))
			}
		}
		sums := renderConcurrency(&b, n, vs, results)
		for i, s := range sums {
			if vs[i].skip == "" {
				points[i] = append(points[i], variantPoint{s.medianWall, s.medianCPU, 100 * s.medianOKFloat / float64(n)})
			}
		}
	}
	if cfg.charts != "" {
		set := chartSet{file: "concurrency", procs: "writers", xs: cfg.writers}
		for i, v := range vs {
			style := slices.Index(variantNames, v.name)
			if style < 0 {
				style = len(variantNames) + i // a -concurrency-extra
			}
			set.lines = append(set.lines, chartLine{name: v.name, style: style, points: points[i]})
		}
		links, err := writeCharts(cfg, set)
		if err != nil {
			return b.String(), err
		}
		b.WriteString("### Charts\n\n" + links)
	}
	b.WriteString(raw.String())
	b.WriteString("\n")
	return b.String(), nil
}

// checked formats a verification count, or n/a for a variant that writes
// no refs.
func checked(v variant, count int) string {
	if !v.verify {
		return "n/a"
	}
	return fmt.Sprint(count)
}

// concurrencyTrial runs n writers of one variant against a fresh repository
// and checks the refs afterwards.
func concurrencyTrial(r *runner, root string, v variant, n int) (res trialResult, err error) {
	rp, err := newRepo(r, root, v.format)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, rp.remove()) }()

	argvs := make([][]string, n)
	for i := range argvs {
		argvs[i] = v.argv(rp.dir, writerRef(i), rp.oid)
	}
	if len(v.env) > 0 {
		r = r.withEnv(v.env...)
	}
	outcomes, wall, err := r.concurrent(rp.dir, argvs)
	if err != nil {
		return res, err
	}
	var refs map[string]string
	if v.verify {
		if refs, err = refMap(r, rp, "refs/heads/w/"); err != nil {
			return res, err
		}
	}
	res.wall = wall
	for i, o := range outcomes {
		res.cpu += o.targetCPU()
		res.gateCPU += o.gateCPU
		got, exists := refs[writerRef(i)]
		switch {
		case o.err == nil:
			res.ok++
			if v.verify && got != rp.oid {
				res.mismatch++
			}
		default:
			res.failed++
			if exists {
				res.ghost++
			}
			if res.firstErr == "" {
				res.firstErr = failureText(o)
			}
		}
	}
	return res, nil
}

func failureText(o outcome) string {
	if line := firstLine(o.stderr); line != "" {
		return line
	}
	return o.err.Error()
}

// renderConcurrency writes the table and ratios for one writer count and
// returns every variant's summary (zero for skipped ones).
func renderConcurrency(b *strings.Builder, n int, vs []variant, results [][]trialResult) []variantSummary {
	fmt.Fprintf(b, "### %d concurrent writers\n\n", n)
	b.WriteString("| variant | what runs | median wall (s) | median CPU (s) | CPU per writer (ms) | successes min / median | all succeeded | median failures | mismatches (total) | written despite failure (total) |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|---|--:|--:|--:|\n")
	sums := make([]variantSummary, len(vs))
	var errs []string
	for i, v := range vs {
		if v.skip != "" {
			fmt.Fprintf(b, "| %s | %s | skipped: %s | | | | | | | |\n", v.name, cell(v.label), cell(v.skip))
			continue
		}
		s := summarize(results[i], n)
		sums[i] = s
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %d / %s | %d/%d in %d of %d trials | %s | %s | %s |\n",
			v.name, cell(v.label), seconds(s.medianWall), seconds(s.medianCPU), millis(s.medianCPU/time.Duration(n)),
			s.minOK, s.medianOK, n, n, s.fullTrials, len(results[i]), s.medianFailed,
			checked(v, s.mismatch), checked(v, s.ghost))
		if s.firstErr != "" {
			errs = append(errs, fmt.Sprintf("- %s: `%s`", v.name, strings.ReplaceAll(s.firstErr, "`", "'")))
		}
	}
	renderRatios(b, n, vs, results, sums)
	if len(errs) > 0 {
		b.WriteString("First failure message seen:\n\n" + strings.Join(errs, "\n") + "\n\n")
	}
	return sums
}

// renderRatios writes the ratio table for the pairs whose both sides were
// selected.
func renderRatios(b *strings.Builder, n int, vs []variant, results [][]trialResult, sums []variantSummary) {
	index := func(name string) int {
		return slices.IndexFunc(vs, func(v variant) bool { return v.name == name })
	}
	var rows []string
	pairs := slices.Clone(ratioPairs)
	for _, v := range vs {
		if !slices.Contains(variantNames, v.name) {
			pairs = append(pairs, extraRatioPairs(v.name)...)
		}
	}
	for _, pair := range pairs {
		a, d := index(pair[0]), index(pair[1])
		if a < 0 || d < 0 {
			continue
		}
		label := pair[0] + " ÷ " + pair[1]
		var skipped []string
		for _, i := range []int{a, d} {
			if vs[i].skip != "" {
				skipped = append(skipped, vs[i].name+" skipped")
			}
		}
		if len(skipped) > 0 {
			rows = append(rows, fmt.Sprintf("| %s | n/a | n/a | %s |", label, strings.Join(skipped, ", ")))
			continue
		}
		note := cautionNote(n, "writers", namedTrials{vs[a].name, results[a]}, namedTrials{vs[d].name, results[d]})
		rows = append(rows, fmt.Sprintf("| %s | **%s** | **%s** | %s |", label,
			ratio(sums[a].medianWall, sums[d].medianWall), ratio(sums[a].medianCPU, sums[d].medianCPU), note))
	}
	if len(rows) == 0 {
		b.WriteString("\n")
		return
	}
	b.WriteString("\n| ratio of medians | wall | CPU | note |\n|---|--:|--:|---|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\n")
	b.WriteString("A ratio compares equal work only when both sides had every writer succeed in every trial; the note says when not.\n\n")
}

// namedTrials are one side of a ratio: a variant's trials under its name.
type namedTrials struct {
	name   string
	trials []trialResult
}

// cautionNote says which sides of a ratio had failed processes (procs
// names them, plural), or is empty when none had.
func cautionNote(n int, procs string, sides ...namedTrials) string {
	var cautions []string
	for _, s := range sides {
		if k := failedTrials(s.trials, n); k > 0 {
			cautions = append(cautions, fmt.Sprintf("%s had failed %s in %d of %d trials", s.name, procs, k, len(s.trials)))
		}
	}
	if len(cautions) == 0 {
		return ""
	}
	return "caution: " + strings.Join(cautions, "; ") + " (unequal work)"
}

// failedTrials counts the trials in which some writer did not succeed.
func failedTrials(trials []trialResult, n int) int {
	k := 0
	for _, t := range trials {
		if t.ok != n {
			k++
		}
	}
	return k
}

// variantSummary aggregates one variant's trials.
type variantSummary struct {
	medianWall    time.Duration
	medianCPU     time.Duration
	minOK         int
	medianOK      string
	medianOKFloat float64
	fullTrials    int
	medianFailed  string
	mismatch      int
	ghost         int
	firstErr      string
}

func summarize(trials []trialResult, n int) variantSummary {
	var s variantSummary
	walls := make([]time.Duration, len(trials))
	cpus := make([]time.Duration, len(trials))
	oks := make([]int, len(trials))
	failed := make([]int, len(trials))
	for i, t := range trials {
		walls[i], cpus[i], oks[i], failed[i] = t.wall, t.cpu, t.ok, t.failed
		if t.ok == n {
			s.fullTrials++
		}
		s.mismatch += t.mismatch
		s.ghost += t.ghost
		if s.firstErr == "" {
			s.firstErr = t.firstErr
		}
	}
	s.medianWall, s.medianCPU = median(walls), median(cpus)
	s.medianOK, s.medianFailed = medianText(oks), medianText(failed)
	s.medianOKFloat = medianFloat(oks)
	if len(oks) > 0 {
		s.minOK = slices.Min(oks)
	}
	return s
}
