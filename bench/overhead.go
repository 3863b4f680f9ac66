package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
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
	failures int
	firstErr string
	hwmKiB   []int64 // polled VmHWM per run (batches only)
	rssKiB   []int64 // ru_maxrss per run (batches only)
	verified int     // batches: runs with every ref correct; singles: refs correct
}

func (c *calls) add(o outcome) {
	c.walls = append(c.walls, o.wall)
	c.hwmKiB = append(c.hwmKiB, o.hwmKiB)
	c.rssKiB = append(c.rssKiB, o.maxrssKiB)
	if o.err != nil {
		c.failures++
		if c.firstErr == "" {
			c.firstErr = failureText(o)
		}
	}
}

func runOverhead(r *runner, cfg config, root string) (string, error) {
	var b strings.Builder
	b.WriteString("## (b) Overhead\n\n")
	if err := singleSection(&b, r, cfg, root); err != nil {
		return b.String(), err
	}
	err := batchSection(&b, r, cfg, root)
	return b.String(), err
}

func singleSection(b *strings.Builder, r *runner, cfg config, root string) error {
	fmt.Fprintf(b, "### Single update\n\n%d calls of each tool per backend, in an order rotated by call; "+
		"git writes `refs/heads/s<i>`, refretry `refs/heads/t<i>`, and a minimal Go wrapper (a Go program that only runs "+
		"`git update-ref` with the same arguments and waits: the floor for any Go tool that starts git) `refs/heads/u<i>`, "+
		"all in the same repository.\n\n", cfg.singleRuns)
	floor, err := buildFloor(root)
	if err != nil {
		return err
	}
	b.WriteString("| backend | tool | median (ms) | p90 (ms) | failures | refs verified |\n|---|---|--:|--:|--:|---|\n")
	var notes []string
	for _, format := range []string{"reftable", "files"} {
		git, rr, fl, err := singleRuns(r, cfg, root, format, floor)
		if err != nil {
			return fmt.Errorf("single update, %s: %w", format, err)
		}
		for _, row := range []struct {
			name string
			c    calls
		}{{"git update-ref", git}, {"refretry", rr}, {"minimal Go wrapper", fl}} {
			fmt.Fprintf(b, "| %s | %s | %s | %s | %d | %d/%d |\n", format, row.name,
				millis(median(row.c.walls)), millis(percentile(row.c.walls, 90)),
				row.c.failures, row.c.verified, len(row.c.walls))
		}
		notes = append(notes, fmt.Sprintf("refretry ÷ git, medians, %s: **%s** (minimal Go wrapper ÷ git: %s)", format,
			ratio(median(rr.walls), median(git.walls)), ratio(median(fl.walls), median(git.walls))))
		notes = append(notes, failureNotes(format, git, rr)...)
	}
	b.WriteString("\n" + strings.Join(notes, "  \n") + "\n\n")
	return nil
}

// singleRuns rotates single-ref updates of git, refretry and the minimal Go wrapper
// in one fresh repository, then checks every ref.
func singleRuns(r *runner, cfg config, root, format, floor string) (git, rr, fl calls, err error) {
	rp, err := newRepo(r, root, format)
	if err != nil {
		return git, rr, fl, err
	}
	defer func() { err = errors.Join(err, rp.remove()) }()
	gitTool, rrTool := overheadTools(cfg)
	flTool := func(args ...string) []string { return append([]string{floor}, gitTool(args...)...) }
	for i := range cfg.singleRuns {
		steps := []func() error{
			func() error { return singleCall(r, rp, gitTool, fmt.Sprintf("refs/heads/s%d", i), &git) },
			func() error { return singleCall(r, rp, rrTool, fmt.Sprintf("refs/heads/t%d", i), &rr) },
			func() error { return singleCall(r, rp, flTool, fmt.Sprintf("refs/heads/u%d", i), &fl) },
		}
		for k := range steps {
			if err := steps[(i+k)%len(steps)](); err != nil {
				return git, rr, fl, err
			}
		}
	}
	progress("single %s: git %s ms, refretry %s ms, minimal Go wrapper %s ms (medians)", format,
		millis(median(git.walls)), millis(median(rr.walls)), millis(median(fl.walls)))
	git.verified, rr.verified, fl.verified, err = countSingles(r, rp)
	return git, rr, fl, err
}

func singleCall(r *runner, rp repo, t tool, ref string, c *calls) error {
	o, err := r.measure(measureSpec{dir: rp.dir, argv: t(ref, rp.oid)})
	if err != nil {
		return err
	}
	c.add(o)
	return nil
}

// countSingles counts refs/heads/s*, t* and u* refs at the commit.
func countSingles(r *runner, rp repo) (s, t, u int, err error) {
	err = eachRef(r, rp, "refs/heads/", func(name, oid string) {
		if oid != rp.oid {
			return
		}
		switch {
		case strings.HasPrefix(name, "refs/heads/s"):
			s++
		case strings.HasPrefix(name, "refs/heads/t"):
			t++
		case strings.HasPrefix(name, "refs/heads/u"):
			u++
		}
	})
	return s, t, u, err
}

func batchSection(b *strings.Builder, r *runner, cfg config, root string) error {
	b.WriteString("### `--stdin` batches\n\n" +
		"Each trial runs `update-ref --stdin` with `create` lines on a fresh reftable repository, once per tool, alternating order. " +
		"VmHWM is polled from `/proc/<pid>/status` every 5 ms for the process itself (for refretry: not its git child); " +
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
		notes = append(notes, failureNotes(fmt.Sprintf("batch of %d", size), git, rr)...)
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
			func() error { return batchCall(r, root, gitTool, input, oid, size, &git) },
			func() error { return batchCall(r, root, rrTool, input, oid, size, &rr) },
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
	return git, rr, nil
}

// batchCall runs one --stdin batch on a fresh reftable repository and
// verifies the resulting ref count.
func batchCall(r *runner, root string, t tool, input, oid string, size int, c *calls) (err error) {
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
	o, err := r.measure(measureSpec{dir: rp.dir, argv: t("--stdin"), stdin: f, pollRSS: true})
	if err != nil {
		return err
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

func failureNotes(what string, git, rr calls) []string {
	var notes []string
	for _, x := range []struct {
		name string
		c    calls
	}{{"git update-ref", git}, {"refretry", rr}} {
		if x.c.firstErr != "" {
			notes = append(notes, fmt.Sprintf("first failure, %s, %s: `%s`", what, x.name,
				strings.ReplaceAll(x.c.firstErr, "`", "'")))
		}
	}
	return notes
}
