package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/group"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/platform"
)

// memberTool is one binary whose group-commit members are measured.
type memberTool struct {
	name string
	path string
	c    calls
}

// memberSection measures what most writers of a storm are: a group-commit member,
// which hands its update to the leader over the line and waits for the outcome,
// starting no git. In each round the benchmark holds the line of a fresh reftable
// repository, as a leader busy with its own git would, and starts -member-runs
// invocations one at a time, each once the one before is queued, with one empty Go
// program measured after each (the floor of any Go process, started the same way).
// Then it hands the line to the first invocation queued, which leads the others'
// group commit; the others are the members measured.
func memberSection(b *strings.Builder, r *runner, cfg config, root string) error {
	if !platform.RendezvousSupported {
		b.WriteString("### Group-commit member\n\nSkipped: group commit needs Linux.\n\n")
		return nil
	}
	fmt.Fprintf(b, "### Group-commit member\n\n%d rounds of %d invocations of each binary, each round on a fresh reftable repository "+
		"whose line the benchmark holds, as a leader busy with its own git would. The invocations start one at a time, each "+
		"once the one before is queued on the line, and an empty Go program is measured after each. Then the benchmark hands "+
		"the line to the first invocation queued, which leads the group commit of the others: those others are the members "+
		"below (the leader, which starts git, is left out). CPU (user+system) and minor page faults come from wait4; a member "+
		"starts no process, so they are the member's own. A member's wall time is mostly its wait for the leader and is not "+
		"shown.\n\n", cfg.trials, cfg.memberRuns)
	empty, err := buildEmpty(root)
	if err != nil {
		return err
	}
	tools := []*memberTool{{name: "refretry", path: cfg.refretry}}
	for _, e := range cfg.extras {
		tools = append(tools, &memberTool{name: e.label, path: e.path})
	}
	var empties calls
	for t := range cfg.trials {
		for k := range tools {
			tool := tools[(t+k)%len(tools)]
			if err := memberRound(r, cfg, root, tool, empty, &empties); err != nil {
				return fmt.Errorf("group-commit members, %s: %w", tool.name, err)
			}
			progress("members trial %d/%d %s: median %s ms CPU, empty Go program %s ms", t+1, cfg.trials, tool.name,
				millis(median(tool.c.cpu)), millis(median(empties.cpu)))
		}
	}
	b.WriteString("| process | median CPU (ms) | p90 CPU (ms) | median minor faults | runs | failures | refs verified |\n" +
		"|---|--:|--:|--:|--:|--:|---|\n")
	row := func(name string, c calls, verified string) {
		fmt.Fprintf(b, "| %s | %s | %s | %d | %d | %d | %s |\n", cell(name), millis(median(c.cpu)),
			millis(percentile(c.cpu, 90)), median(c.minflt), len(c.cpu), c.failures, verified)
	}
	row("empty Go program", empties, "n/a")
	for _, tool := range tools {
		row(tool.name+" member", tool.c, fmt.Sprintf("%d/%d", tool.c.verified, len(tool.c.cpu)))
	}
	b.WriteString("\n| ratio of medians | CPU | minor faults |\n|---|--:|--:|\n")
	for _, tool := range tools {
		fmt.Fprintf(b, "| %s member ÷ empty Go program | **%s** | %s |\n", cell(tool.name),
			ratio(median(tool.c.cpu), median(empties.cpu)), ratio(time.Duration(median(tool.c.minflt)), time.Duration(median(empties.minflt))))
	}
	b.WriteString("\n")
	var notes []string
	for _, tool := range tools {
		notes = append(notes, failureNotes("group-commit members", namedCalls{name: tool.name, c: tool.c})...)
	}
	notes = append(notes, failureNotes("group-commit members", namedCalls{name: "empty Go program", c: empties})...)
	if len(notes) > 0 {
		b.WriteString(strings.Join(notes, "  \n") + "\n\n")
	}
	return nil
}

// memberWait bounds how long the benchmark waits for an invocation to queue.
const memberWait = 30 * time.Second

// memberRound runs one round of tool's invocations behind a held line (see
// memberSection) and adds every one but the first, which leads, to tool.c, and the
// empty programs to empties.
func memberRound(r *runner, cfg config, root string, tool *memberTool, empty string, empties *calls) (err error) {
	rp, err := newRepo(r, root, "reftable")
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, rp.remove()) }()
	name, ok := group.Name(filepath.Join(rp.dir, ".git"))
	if !ok {
		return errors.New("no rendezvous name for the repository")
	}
	l, err := platform.Listen(name)
	if err != nil {
		return fmt.Errorf("taking the line: %w", err)
	}
	held := true
	defer func() {
		if held {
			l.Close()
		}
	}()
	type started struct {
		cmd    *exec.Cmd
		ctx    context.Context
		cancel context.CancelFunc
		stderr *headBuffer
		begin  time.Time
	}
	var procs []started
	defer func() {
		for _, p := range procs {
			p.cancel()
		}
	}()
	for i := range cfg.memberRuns {
		ctx, cancel := context.WithTimeout(r.ctx, r.timeout)
		p := started{ctx: ctx, cancel: cancel, stderr: &headBuffer{max: stderrKeep}}
		p.cmd = r.command(ctx, rp.dir, []string{tool.path, memberRef(i), rp.oid})
		p.cmd.Stderr = p.stderr
		p.begin = time.Now()
		if err := p.cmd.Start(); err != nil {
			cancel()
			return err
		}
		procs = append(procs, p)
		for deadline := time.Now().Add(memberWait); testutil.Queued(name) < i+1; {
			if time.Now().After(deadline) {
				return fmt.Errorf("invocation %d not queued after %v (%d queued)", i, memberWait, testutil.Queued(name))
			}
			time.Sleep(time.Millisecond)
		}
		o, err := r.measure(measureSpec{dir: rp.dir, argv: []string{empty}})
		if err != nil {
			return err
		}
		empties.add(o)
	}
	group.HandOver(l)
	held = false
	outcomes := make([]outcome, len(procs))
	for i, p := range procs {
		waitErr := p.cmd.Wait()
		outcomes[i] = outcome{wall: time.Since(p.begin), err: timeoutErr(p.ctx, waitErr, r.timeout), stderr: p.stderr.String()}
		outcomes[i].setUsage(p.cmd.ProcessState)
	}
	refs, err := refMap(r, rp, "refs/heads/m/")
	if err != nil {
		return err
	}
	for i, o := range outcomes[1:] {
		tool.c.add(o)
		if o.err == nil && refs[memberRef(i+1)] == rp.oid {
			tool.c.verified++
		}
	}
	if o := outcomes[0]; o.err != nil {
		return fmt.Errorf("the invocation that led failed: %s", failureText(o))
	}
	return nil
}

func memberRef(i int) string { return fmt.Sprintf("refs/heads/m/%d", i) }
