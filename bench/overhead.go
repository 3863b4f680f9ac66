package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// tool builds the command line of one of the two tools compared.
type tool func(args ...string) []string

func overheadTools(cfg config) (git, rr tool) {
	git = func(args ...string) []string {
		return append([]string{cfg.git, "update-ref"}, args...)
	}
	rr = func(args ...string) []string {
		return append([]string{cfg.refretry}, args...)
	}
	return git, rr
}

// calls accumulates the runs of one tool.
type calls struct {
	walls    []time.Duration
	cpu      []time.Duration // user+system of the process and its waited-for children
	minflt   []int64         // ru_minflt of the process and its waited-for children
	failures int
	firstErr string
	hwmKiB   []int64 // polled VmHWM per run (batches only)
	rssKiB   []int64 // ru_maxrss per run (batches only)
	verified int     // batches: runs with every ref correct; singles: refs correct
}

func (c *calls) add(o outcome) {
	c.walls = append(c.walls, o.wall)
	c.cpu = append(c.cpu, o.cpu)
	c.minflt = append(c.minflt, o.minflt)
	c.hwmKiB = append(c.hwmKiB, o.hwmKiB)
	c.rssKiB = append(c.rssKiB, o.maxrssKiB)
	if o.err != nil {
		c.failures++
		if c.firstErr == "" {
			c.firstErr = failureText(o)
		}
	}
}

// namedCalls is one tool's runs under its report name.
type namedCalls struct {
	name string
	argv tool
	c    calls
}

func runOverhead(r *runner, cfg config, root string) (string, error) {
	var b strings.Builder
	b.WriteString("## (b) Overhead\n\n")
	if err := singleSection(&b, r, cfg, root); err != nil {
		return b.String(), err
	}
	if err := memberSection(&b, r, cfg, root); err != nil {
		return b.String(), err
	}
	err := batchSection(&b, r, cfg, root)
	return b.String(), err
}

// singleTools are the tools of the single-update rotation: git, refretry,
// the minimal Go wrapper, then every -single-extra binary.
func singleTools(cfg config, floor string) []namedCalls {
	gitTool, rrTool := overheadTools(cfg)
	tools := []namedCalls{
		{name: "git update-ref", argv: gitTool},
		{name: "refretry", argv: rrTool},
		{name: "minimal Go wrapper", argv: func(args ...string) []string { return append([]string{floor}, gitTool(args...)...) }},
	}
	for _, e := range cfg.extras {
		tools = append(tools, namedCalls{name: e.label, argv: func(args ...string) []string {
			return append([]string{e.path}, args...)
		}})
	}
	return tools
}

// Indexes into singleTools.
const (
	singleGit = iota
	singleRefretry
	singleFloor
	singleExtras
)

func singleSection(b *strings.Builder, r *runner, cfg config, root string) error {
	fmt.Fprintf(b, "### Single update\n\n%d calls of each tool per backend, in an order rotated by call, all in the same repository, "+
		"each tool writing its own `refs/heads/single/<tool>/<i>`. The minimal Go wrapper is a Go program that only runs "+
		"`git update-ref` with the same arguments and waits: the floor for any Go tool that starts git. "+
		"CPU (user+system) and minor page faults come from wait4 and include the git child a wrapper waited for.\n\n", cfg.singleRuns)
	floor, err := buildFloor(root)
	if err != nil {
		return err
	}
	b.WriteString("| backend | tool | median wall (ms) | p90 wall (ms) | median CPU (ms) | median minor faults | failures | refs verified |\n" +
		"|---|---|--:|--:|--:|--:|--:|---|\n")
	var ratios strings.Builder
	ratios.WriteString("| backend | ratio of medians | wall | CPU |\n|---|---|--:|--:|\n")
	var notes []string
	for _, format := range []string{"reftable", "files"} {
		tools, err := singleRuns(r, cfg, root, format, floor)
		if err != nil {
			return fmt.Errorf("single update, %s: %w", format, err)
		}
		for _, t := range tools {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %d | %d | %d/%d |\n", format, cell(t.name),
				millis(median(t.c.walls)), millis(percentile(t.c.walls, 90)), millis(median(t.c.cpu)),
				median(t.c.minflt), t.c.failures, t.c.verified, len(t.c.walls))
		}
		ratioRow := func(a, d int) {
			fmt.Fprintf(&ratios, "| %s | %s ÷ %s | **%s** | **%s** |\n", format, cell(tools[a].name), cell(tools[d].name),
				ratio(median(tools[a].c.walls), median(tools[d].c.walls)), ratio(median(tools[a].c.cpu), median(tools[d].c.cpu)))
		}
		ratioRow(singleRefretry, singleGit)
		ratioRow(singleFloor, singleGit)
		ratioRow(singleRefretry, singleFloor)
		for k := singleExtras; k < len(tools); k++ {
			ratioRow(k, singleGit)
			ratioRow(k, singleFloor)
			ratioRow(k, singleRefretry)
		}
		notes = append(notes, failureNotes(format, tools...)...)
	}
	b.WriteString("\n" + ratios.String() + "\n")
	if len(notes) > 0 {
		b.WriteString(strings.Join(notes, "  \n") + "\n\n")
	}
	return nil
}

// singleRuns rotates single-ref updates of every tool in one fresh
// repository, then checks every ref.
func singleRuns(r *runner, cfg config, root, format, floor string) (tools []namedCalls, err error) {
	rp, err := newRepo(r, root, format)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, rp.remove()) }()
	tools = singleTools(cfg, floor)
	for i := range cfg.singleRuns {
		for k := range tools {
			j := (i + k) % len(tools)
			t := &tools[j]
			o, err := r.measure(measureSpec{dir: rp.dir, argv: t.argv(singleRef(j, i), rp.oid)})
			if err != nil {
				return tools, err
			}
			t.c.add(o)
		}
	}
	summary := make([]string, len(tools))
	for k, t := range tools {
		summary[k] = fmt.Sprintf("%s %s ms", t.name, millis(median(t.c.walls)))
	}
	progress("single %s (medians): %s", format, strings.Join(summary, ", "))
	counts, err := countSingles(r, rp, len(tools))
	for k := range tools {
		tools[k].c.verified = counts[k]
	}
	return tools, err
}

func singleRef(tool, i int) string { return fmt.Sprintf("refs/heads/single/%d/%d", tool, i) }

// countSingles counts, per tool, the refs/heads/single/<tool>/ refs at the
// commit.
func countSingles(r *runner, rp repo, tools int) ([]int, error) {
	counts := make([]int, tools)
	err := eachRef(r, rp, "refs/heads/single/", func(name, oid string) {
		if oid != rp.oid {
			return
		}
		k, _, _ := strings.Cut(strings.TrimPrefix(name, "refs/heads/single/"), "/")
		if i, err := strconv.Atoi(k); err == nil && i >= 0 && i < tools {
			counts[i]++
		}
	})
	return counts, err
}

func batchSection(b *strings.Builder, r *runner, cfg config, root string) error {
	b.WriteString("### `--stdin` batches\n\n" +
		"Each trial runs `update-ref --stdin` with `create` lines on a fresh reftable repository, once per tool, alternating order. " +
		"Peak memory comes from one more run of each tool, not timed: VmHWM is polled from `/proc/<pid>/status` every 5 ms " +
		"for the process itself (for refretry: not its git child), which slows the process polled. " +
		"ru_maxrss comes from wait4 and, for refretry, includes the git child it waited for. " +
		"A run lasting only a few polls can end before VmHWM reaches its peak, so small batches may understate it.\n\n")
	b.WriteString("| refs | tool | median wall (s) | refretry ÷ git | max VmHWM (MiB) | max ru_maxrss (MiB) | failures | ref count verified |\n")
	b.WriteString("|--:|---|--:|--:|--:|--:|--:|---|\n")
	oid, err := probeOID(r, root)
	if err != nil {
		return err
	}
	var notes []string
	for _, size := range cfg.batches {
		git, rr, err := batchRuns(r, cfg, root, size, oid)
		if err != nil {
			return fmt.Errorf("batch of %d: %w", size, err)
		}
		gm, rm := median(git.walls), median(rr.walls)
		fmt.Fprintf(b, "| %d | git update-ref | %s | | %s | %s | %d | %d/%d |\n", size, seconds(gm),
			mib(slices.Max(git.hwmKiB)), mib(slices.Max(git.rssKiB)), git.failures, git.verified, len(git.walls))
		fmt.Fprintf(b, "| %d | refretry | %s | **%s** | **%s** | %s | %d | %d/%d |\n", size, seconds(rm), ratio(rm, gm),
			mib(slices.Max(rr.hwmKiB)), mib(slices.Max(rr.rssKiB)), rr.failures, rr.verified, len(rr.walls))
		notes = append(notes, failureNotes(fmt.Sprintf("batch of %d", size),
			namedCalls{name: "git update-ref", c: git}, namedCalls{name: "refretry", c: rr})...)
	}
	b.WriteString("\n")
	if len(notes) > 0 {
		b.WriteString(strings.Join(notes, "  \n") + "\n\n")
	}
	return nil
}

// probeOID returns the commit id every fresh repository gets.
func probeOID(r *runner, root string) (string, error) {
	rp, err := newRepo(r, root, "reftable")
	if err != nil {
		return "", err
	}
	return rp.oid, rp.remove()
}

func batchRuns(r *runner, cfg config, root string, size int, oid string) (git, rr calls, err error) {
	input, err := writeBatchFile(root, size, oid)
	if err != nil {
		return git, rr, err
	}
	defer func() { err = errors.Join(err, os.Remove(input)) }()
	gitTool, rrTool := overheadTools(cfg)
	for t := range cfg.trials {
		steps := []func() error{
			func() error { return batchCall(r, root, gitTool, input, oid, size, &git, false) },
			func() error { return batchCall(r, root, rrTool, input, oid, size, &rr, false) },
		}
		if t%2 == 1 {
			slices.Reverse(steps)
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return git, rr, err
			}
		}
		progress("batch %d trial %d/%d: git %s s, refretry %s s", size, t+1, cfg.trials,
			seconds(git.walls[t]), seconds(rr.walls[t]))
	}
	// Peak memory comes from one more run of each, whose time is not counted:
	// reading /proc/<pid>/status every few milliseconds slows the process it
	// reads (3-4 % for refretry at 10k updates, measured), so timed runs do not poll.
	if err := batchCall(r, root, gitTool, input, oid, size, &git, true); err != nil {
		return git, rr, err
	}
	if err := batchCall(r, root, rrTool, input, oid, size, &rr, true); err != nil {
		return git, rr, err
	}
	return git, rr, nil
}

// batchCall runs one --stdin batch on a fresh reftable repository and
// verifies the resulting ref count. memory runs poll the process's peak memory
// and count for nothing else.
func batchCall(r *runner, root string, t tool, input, oid string, size int, c *calls, memory bool) (err error) {
	rp, err := newRepo(r, root, "reftable")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rp.remove()) }()
	if rp.oid != oid {
		return fmt.Errorf("commit id %s differs from %s: repository setup is not deterministic", rp.oid, oid)
	}
	f, err := os.Open(input)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	o, err := r.measure(measureSpec{dir: rp.dir, argv: t("--stdin"), stdin: f, pollRSS: memory})
	if err != nil {
		return err
	}
	if memory {
		c.hwmKiB = append(c.hwmKiB, o.hwmKiB)
		c.rssKiB = append(c.rssKiB, o.maxrssKiB)
		return nil
	}
	c.add(o)
	n := 0
	if err := eachRef(r, rp, "refs/heads/b/", func(_, got string) {
		if got == oid {
			n++
		}
	}); err != nil {
		return err
	}
	if n == size {
		c.verified++
	}
	return nil
}

func failureNotes(what string, tools ...namedCalls) []string {
	var notes []string
	for _, x := range tools {
		if x.c.firstErr != "" {
			notes = append(notes, fmt.Sprintf("first failure, %s, %s: `%s`", what, x.name,
				strings.ReplaceAll(x.c.firstErr, "`", "'")))
		}
	}
	return notes
}
