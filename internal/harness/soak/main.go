// Command soak is refretry's model-checked soak: rounds of random, concurrent refretry
// invocations against fresh repositories, each round's final state checked against a
// model of what the invocations reported.
//
//	go run ./internal/harness/soak -seconds 120 -rounds 1000 -git PATH -old-git PATH -refretry PATH
//
// Round i uses seed+i and configuration i%3 (git 2.55 reftable, git 2.55 files, git
// 2.39 files). A failing round is reproduced with -seed S -first R -rounds 1, which the
// failure report prints. The exit code is 1 when any round has a violation, 2 on a setup
// error.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

func main() {
	var (
		seconds  = flag.Int("seconds", 120, "stop starting rounds after this many seconds")
		rounds   = flag.Int("rounds", 1000, "stop after this many rounds")
		first    = flag.Int("first", 0, "number of the first round (to reproduce one)")
		seed     = flag.Int64("seed", 0, "base seed; round i uses seed+i (0: from the clock)")
		git      = flag.String("git", "", "git 2.55 (reftable support)")
		oldGit   = flag.String("old-git", "/usr/bin/git", "git 2.39")
		refretry = flag.String("refretry", "", "refretry binary")
		maxOps   = flag.Int("ops", 400, "most ref operations in a round")
		keep     = flag.Bool("keep", false, "keep the repositories of failing rounds")
		coalesce = flag.Bool("coalesce", false, "run half the one-ref invocations with --coalesce")
		verbose  = flag.Bool("v", false, "print every round's figures")
	)
	flag.Parse()
	if *git == "" || *refretry == "" {
		fmt.Fprintln(os.Stderr, "soak: -git and -refretry are required")
		os.Exit(2)
	}
	if *seed == 0 {
		*seed = time.Now().UnixNano() % 1_000_000_000
	}
	configs := []config{
		{name: "git2.55/reftable", git: *git, backend: "reftable", symrefCmds: true, batchUpdates: true, remoteHEAD: true},
		{name: "git2.55/files", git: *git, backend: "files", symrefCmds: true, batchUpdates: true, remoteHEAD: true},
		{name: "git2.39/files", git: *oldGit, backend: "files"},
	}
	fmt.Printf("soak: seed %d, up to %d rounds or %ds; reproduce a round with: -seed %d -first <round> -rounds 1 -ops %d -coalesce=%v\n",
		*seed, *rounds, *seconds, *seed, *maxOps, *coalesce)
	tot := newTotals()
	deadline := time.Now().Add(time.Duration(*seconds) * time.Second)
	failed := 0
	for i := *first; i < *first+*rounds && time.Now().Before(deadline); i++ {
		cfg := configs[i%len(configs)]
		rs := *seed + int64(i)
		res, err := runRound(cfg, rs, *refretry, *maxOps, *coalesce, *keep)
		if err != nil {
			fmt.Fprintf(os.Stderr, "soak: round %d (%s, seed %d): setup failed: %v\n", i, cfg.name, rs, err)
			os.Exit(2)
		}
		tot.add(cfg.name, res)
		if *verbose || len(res.violations) > 0 {
			fmt.Printf("round %d %s seed %d: %d invocations, %d ops, %d retries, %d failures, %d violations\n",
				i, cfg.name, rs, res.invocations, res.ops, res.retries, res.failures(), len(res.violations))
		}
		if len(res.violations) > 0 {
			failed++
			for _, v := range res.violations {
				fmt.Printf("  VIOLATION: %s\n", v)
			}
			fmt.Printf("  reproduce: go run ./internal/harness/soak -seed %d -first %d -rounds 1 -ops %d -coalesce=%v -git %s -old-git %s -refretry %s -keep\n",
				*seed, i, *maxOps, *coalesce, *git, *oldGit, *refretry)
			if res.kept != "" {
				fmt.Printf("  repository kept in %s\n", res.kept)
			}
		}
	}
	tot.print(os.Stdout)
	if tot.violations > 0 {
		fmt.Printf("soak: FAILED: %d violations in %d rounds\n", tot.violations, failed)
		os.Exit(1)
	}
	fmt.Println("soak: ok, 0 violations")
}

// totals are the figures over all rounds.
type totals struct {
	rounds, invocations, ops, retries, violations, holders int
	byConfig                                               map[string]int
	failures                                               map[string]int
	rejections                                             map[string]int
	forms                                                  map[string]int
	start                                                  time.Time
}

func newTotals() *totals {
	return &totals{byConfig: map[string]int{}, failures: map[string]int{}, rejections: map[string]int{}, forms: map[string]int{}, start: time.Now()}
}

func (t *totals) add(cfg string, r *roundResult) {
	t.rounds++
	t.byConfig[cfg]++
	t.invocations += r.invocations
	t.ops += r.ops
	t.retries += r.retries
	t.holders += r.holders
	t.violations += len(r.violations)
	for k, v := range r.failureClasses {
		t.failures[k] += v
	}
	for k, v := range r.forms {
		t.forms[k] += v
	}
	for k, v := range r.rejections {
		t.rejections[k] += v
	}
}

func (t *totals) print(w io.Writer) {
	fmt.Fprintf(w, "soak: %d rounds in %v (%s)\n", t.rounds, time.Since(t.start).Round(time.Second), joinCounts(t.byConfig))
	fmt.Fprintf(w, "soak: invocations %d (%s), ref operations %d\n", t.invocations, joinCounts(t.forms), t.ops)
	fmt.Fprintf(w, "soak: retries %d (refretry: attempt lines); lock holders injected %d\n", t.retries, t.holders)
	nf := 0
	for _, v := range t.failures {
		nf += v
	}
	fmt.Fprintf(w, "soak: failures %d (%s)\n", nf, joinCounts(t.failures))
	nr := 0
	for _, v := range t.rejections {
		nr += v
	}
	fmt.Fprintf(w, "soak: --batch-updates rejections %d (%s)\n", nr, joinCounts(t.rejections))
	fmt.Fprintf(w, "soak: violations %d\n", t.violations)
}

func joinCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
