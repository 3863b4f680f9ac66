package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// variant is one way of running the concurrent writers.
type variant struct {
	label  string
	format string // ref storage format of the repository
	argv   func(ref, oid string) []string
	env    []string // added to the writers' environment
}

func concurrencyVariants(cfg config) []variant {
	git := func(pre ...string) func(ref, oid string) []string {
		return func(ref, oid string) []string {
			return append(append([]string{cfg.git}, pre...), "update-ref", ref, oid)
		}
	}
	return []variant{
		{"1. git update-ref, files", "files", git(), nil},
		{"2. git update-ref, reftable", "reftable", git(), nil},
		{"3. git -c reftable.lockTimeout=5000 update-ref, reftable", "reftable", git("-c", "reftable.lockTimeout=5000"), nil},
		{"4. refretry, reftable", "reftable", func(ref, oid string) []string {
			return []string{cfg.refretry, ref, oid}
		}, nil},
		// Switched on through the environment, as a CI system would: a refretry
		// option on the command line costs a parse of refretry's own grammar.
		{"5. refretry --coalesce, reftable", "reftable", func(ref, oid string) []string {
			return []string{cfg.refretry, ref, oid}
		}, []string{"REFRETRY_COALESCE=1"}},
	}
}

// Indexes into concurrencyVariants used for the ratios.
const (
	variantFiles       = 0
	variantLockTimeout = 2
	variantRefretry    = 3
	variantCoalesce    = 4
)

// trialResult is one variant in one trial.
type trialResult struct {
	wall     time.Duration
	ok       int    // exited 0
	failed   int    // exited non-zero or timed out
	mismatch int    // exited 0 but the ref is missing or wrong
	ghost    int    // exited non-zero but the ref exists anyway
	firstErr string // first line of the first failure's stderr
}

func runConcurrency(r *runner, cfg config, root string) (string, error) {
	vs := concurrencyVariants(cfg)
	var b, raw strings.Builder
	b.WriteString("## (a) Concurrency\n\n")
	b.WriteString("N processes start together (held at a shared gate, then released at once), each updating its own `refs/heads/w/<i>` " +
		"in a fresh one-commit repository. Wall time runs from the release to the last exit. " +
		"The variants run interleaved within every trial, in an order rotated by trial.\n\n")
	raw.WriteString("### Raw trials\n\n| writers | trial | variant | wall (s) | ok | failed | mismatches | written despite failure |\n|--:|--:|---|--:|--:|--:|--:|--:|\n")
	for _, n := range cfg.writers {
		results := make([][]trialResult, len(vs))
		for t := range cfg.trials {
			for k := range vs {
				i := (t + k) % len(vs)
				res, err := concurrencyTrial(r, root, vs[i], n)
				if err != nil {
					return b.String(), fmt.Errorf("%d writers, %s: %w", n, vs[i].label, err)
				}
				progress("concurrency n=%d trial %d/%d %s: %s s, %d/%d ok", n, t+1, cfg.trials, vs[i].label, seconds(res.wall), res.ok, n)
				results[i] = append(results[i], res)
				fmt.Fprintf(&raw, "| %d | %d | %s | %s | %d | %d | %d | %d |\n",
					n, t+1, vs[i].label, seconds(res.wall), res.ok, res.failed, res.mismatch, res.ghost)
			}
		}
		renderConcurrency(&b, n, vs, results)
	}
	b.WriteString(raw.String())
	b.WriteString("\n")
	return b.String(), nil
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
		argvs[i] = v.argv(writerRef(i), rp.oid)
	}
	if len(v.env) > 0 {
		rv := *r
		rv.env = append(slices.Clip(r.env), v.env...)
		r = &rv
	}
	outcomes, wall, err := r.concurrent(rp.dir, argvs)
	if err != nil {
		return res, err
	}
	refs, err := refMap(r, rp, "refs/heads/w/")
	if err != nil {
		return res, err
	}
	res.wall = wall
	for i, o := range outcomes {
		got, exists := refs[writerRef(i)]
		switch {
		case o.err == nil:
			res.ok++
			if got != rp.oid {
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

func renderConcurrency(b *strings.Builder, n int, vs []variant, results [][]trialResult) {
	fmt.Fprintf(b, "### %d concurrent writers\n\n", n)
	b.WriteString("| variant | median wall (s) | successes min / median | all succeeded | median failures | mismatches (total) | written despite failure (total) |\n")
	b.WriteString("|---|--:|--:|---|--:|--:|--:|\n")
	walls := make([]time.Duration, len(vs))
	var errs []string
	for i, v := range vs {
		s := summarize(results[i], n)
		walls[i] = s.medianWall
		fmt.Fprintf(b, "| %s | %s | %d / %s | %d/%d in %d of %d trials | %s | %d | %d |\n",
			v.label, seconds(s.medianWall), s.minOK, s.medianOK, n, n, s.fullTrials, len(results[i]),
			s.medianFailed, s.mismatch, s.ghost)
		if s.firstErr != "" {
			errs = append(errs, fmt.Sprintf("- %s: `%s`", v.label, strings.ReplaceAll(s.firstErr, "`", "'")))
		}
	}
	fmt.Fprintf(b, "\nrefretry median wall ÷ variant 3: **%s**; ÷ variant 1: **%s**.\n\n",
		ratio(walls[variantRefretry], walls[variantLockTimeout]), ratio(walls[variantRefretry], walls[variantFiles]))
	fmt.Fprintf(b, "refretry --coalesce median wall ÷ variant 1: **%s**; ÷ variant 4: **%s**.\n\n",
		ratio(walls[variantCoalesce], walls[variantFiles]), ratio(walls[variantCoalesce], walls[variantRefretry]))
	if incomplete(results[variantRefretry], n) || incomplete(results[variantLockTimeout], n) || incomplete(results[variantFiles], n) ||
		incomplete(results[variantCoalesce], n) {
		b.WriteString("Caution: a variant in these ratios had failed writers in some trial, so the times compare unequal work.\n\n")
	}
	if len(errs) > 0 {
		b.WriteString("First failure message seen:\n\n" + strings.Join(errs, "\n") + "\n\n")
	}
}

// incomplete reports whether any trial had a writer that did not succeed.
func incomplete(trials []trialResult, n int) bool {
	return slices.ContainsFunc(trials, func(t trialResult) bool { return t.ok != n })
}

// variantSummary aggregates one variant's trials.
type variantSummary struct {
	medianWall   time.Duration
	minOK        int
	medianOK     string
	fullTrials   int
	medianFailed string
	mismatch     int
	ghost        int
	firstErr     string
}

func summarize(trials []trialResult, n int) variantSummary {
	var s variantSummary
	walls := make([]time.Duration, len(trials))
	oks := make([]int, len(trials))
	failed := make([]int, len(trials))
	for i, t := range trials {
		walls[i], oks[i], failed[i] = t.wall, t.ok, t.failed
		if t.ok == n {
			s.fullTrials++
		}
		s.mismatch += t.mismatch
		s.ghost += t.ghost
		if s.firstErr == "" {
			s.firstErr = t.firstErr
		}
	}
	s.medianWall, s.medianOK, s.medianFailed = median(walls), medianText(oks), medianText(failed)
	if len(oks) > 0 {
		s.minOK = slices.Min(oks)
	}
	return s
}
