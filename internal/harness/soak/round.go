package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/refretry/refretry/internal/harness/hermetic"
)

// roundResult is what one round did and found.
type roundResult struct {
	invocations, ops, retries int
	holders                   int // lock-holding transactions that aborted
	failureClasses            map[string]int
	rejections                map[string]int // --batch-updates rejections, by reason
	forms                     map[string]int
	violations                []string
	kept                      string
}

func (r *roundResult) failures() int {
	n := 0
	for _, v := range r.failureClasses {
		n += v
	}
	return n
}

// repo is a scratch repository with a fixed environment.
type repo struct {
	git, dir string
	env      []string
}

func (r *repo) run(stdin string, args ...string) (string, error) {
	cmd := exec.Command(r.git, args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String(), nil
}

// newRepo makes a repository with main and other branches, reflogs for every ref, and
// a pool of n distinct commits, returned in order.
func newRepo(cfg config, root string, n int) (*repo, []string, error) {
	r := &repo{git: cfg.git, dir: filepath.Join(root, "repo"), env: hermetic.Env(os.Environ(), root)}
	args := []string{"init", "-q", "-b", "main"}
	if cfg.backend == "reftable" {
		args = append(args, "--ref-format=reftable")
	}
	init := &repo{git: cfg.git, dir: root, env: r.env}
	if _, err := init.run("", append(args, r.dir)...); err != nil {
		return nil, nil, err
	}
	if _, err := r.run("", "config", "core.logAllRefUpdates", "always"); err != nil {
		return nil, nil, err
	}
	var fi strings.Builder
	for i := 1; i <= n; i++ {
		msg := fmt.Sprintf("pool %d\n", i)
		fmt.Fprintf(&fi, "commit refs/heads/main\nmark :%d\ncommitter C O Mitter <committer@example.com> 1700000000 +0000\ndata %d\n%s\n", i, len(msg), msg)
	}
	marks := filepath.Join(root, "marks")
	if _, err := r.run(fi.String(), "fast-import", "--quiet", "--export-marks="+marks); err != nil {
		return nil, nil, err
	}
	b, err := os.ReadFile(marks)
	if err != nil {
		return nil, nil, err
	}
	pool := make([]string, n)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var i int
		var oid string
		if _, err := fmt.Sscanf(line, ":%d %s", &i, &oid); err != nil || i < 1 || i > n {
			return nil, nil, fmt.Errorf("marks line %q", line)
		}
		pool[i-1] = oid
	}
	if _, err := r.run("", "update-ref", "refs/heads/other", "main"); err != nil {
		return nil, nil, err
	}
	return r, pool, nil
}

// setup creates the refs that exist before the round starts.
func (r *repo) setup(cfg config, p *plan) error {
	var in strings.Builder
	var syms []*refPlan
	for _, rp := range p.refs {
		if rp.initial != "" {
			fmt.Fprintf(&in, "create %s %s\n", rp.name, rp.initial)
		}
		if rp.symTo != "" {
			syms = append(syms, rp)
		}
	}
	if _, err := r.run(in.String(), "update-ref", "-m", "setup", "--stdin"); err != nil {
		return err
	}
	for _, rp := range syms {
		if _, err := r.run("", "symbolic-ref", "-m", "setup", rp.name, rp.symTo); err != nil {
			return err
		}
	}
	return nil
}

// runRound makes a repository, runs a random workload on it and checks the outcome.
func runRound(cfg config, seed int64, refretry string, maxOps int, coalesce, keep bool) (*roundResult, error) {
	rng := rand.New(rand.NewSource(seed))
	root, err := os.MkdirTemp("", "refretry-soak-")
	if err != nil {
		return nil, err
	}
	poolSize := 3*maxOps + 64
	r, pool, err := newRepo(cfg, root, poolSize)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	next := 0
	take := func() string {
		if next == len(pool) {
			panic("soak: commit pool exhausted")
		}
		next++
		return pool[next-1]
	}
	p := makePlan(rng, cfg, maxOps, coalesce, take)
	if err := r.setup(cfg, p); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	// The fetch part draws from a generator of its own: the rest of the round is
	// what it would be without it.
	rm, err := newRemote(cfg, root, r, rand.New(rand.NewSource(^seed)))
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	// Background noise: packing refs contends for packed-refs.lock (files) and
	// compacts the stack (reftable) while the writers run.
	packs := make([]int, rng.Intn(3))
	for i := range packs {
		packs[i] = rng.Intn(400)
	}

	// Lock holders: plain git transactions that prepare (taking the locks of a few
	// refs, or reftable's one lock), hold longer than refretry's first lock window,
	// then abort. They force retries, and must leave nothing behind.
	type holder struct {
		delay, hold int
		input       string
	}
	var written []*refPlan
	for _, rp := range p.refs {
		if rp.kind == kShared || rp.kind == kChain || rp.kind == kDelete || rp.kind == kExists {
			written = append(written, rp)
		}
	}
	holders := make([]holder, 0, 3)
	for range 1 + rng.Intn(3) {
		if len(written) == 0 {
			break
		}
		h := holder{delay: rng.Intn(300), hold: 1200 + rng.Intn(1800)}
		var in strings.Builder
		in.WriteString("start\n")
		for i, rp := range rng.Perm(len(written))[:1+rng.Intn(min(3, len(written)))] {
			if i == 0 && rng.Intn(2) == 0 {
				fmt.Fprintf(&in, "delete %s\n", written[rp].name) // takes packed-refs.lock too
			} else {
				fmt.Fprintf(&in, "update %s %s\n", written[rp].name, take())
			}
		}
		h.input = in.String() + "prepare\n"
		holders = append(holders, h)
	}

	var wg sync.WaitGroup
	start := time.Now()
	for _, h := range holders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(time.Duration(h.delay) * time.Millisecond)))
			holdLocks(r, h.input, time.Duration(h.hold)*time.Millisecond)
		}()
	}
	for _, inv := range p.invs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(time.Duration(inv.delay) * time.Millisecond)))
			runInvocation(r, refretry, inv)
		}()
	}
	for _, f := range rm.fetches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(time.Duration(f.delay) * time.Millisecond)))
			runFetch(r, refretry, rm, f)
		}()
	}
	for _, d := range packs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(time.Duration(d) * time.Millisecond)))
			_, _ = r.run("", "pack-refs", "--all")
		}()
	}
	wg.Wait()

	res := &roundResult{invocations: len(p.invs), ops: p.ops, holders: len(holders), failureClasses: map[string]int{}, rejections: map[string]int{}, forms: map[string]int{}}
	for _, inv := range p.invs {
		res.forms[inv.form]++
		if inv.coalesce {
			res.forms["(of which --coalesce)"]++
		}
		res.retries += strings.Count(inv.stderr, "refretry: attempt ")
		if inv.code != 0 {
			res.failureClasses[failureClass(inv.stderr)]++
		}
	}
	for _, f := range rm.fetches {
		res.invocations++
		res.forms[f.form]++
		res.retries += strings.Count(f.stderr, "refretry: attempt ")
		if f.code != 0 {
			res.failureClasses[failureClass(f.stderr)]++
		}
	}
	st, err := readState(r, p)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	all, err := listRefs(r)
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	res.violations = append(check(p, st), checkFetches(cfg, rm, all)...)
	for _, inv := range p.invs {
		for _, o := range inv.ops {
			if o.rejected {
				res.rejections[o.reason]++
			}
		}
	}
	if len(res.violations) > 0 && keep {
		res.kept = root
		keepOutput(root, p, rm)
	} else {
		os.RemoveAll(root)
	}
	return res, nil
}

// keepOutput writes every process's output next to the kept repository, as
// output/inv-N and output/fetch-N: its arguments, exit code, stdout and stderr.
func keepOutput(root string, p *plan, rm *remote) {
	dir := filepath.Join(root, "output")
	if os.Mkdir(dir, 0o755) != nil {
		return
	}
	write := func(name string, args []string, code int, stdout, stderr string) {
		text := fmt.Sprintf("args: %q\nexit: %d\n--- stdout\n%s--- stderr\n%s", args, code, stdout, stderr)
		_ = os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	for _, inv := range p.invs {
		write(fmt.Sprintf("inv-%d", inv.id), inv.args(), inv.code, inv.stdout, inv.stderr)
	}
	for _, f := range rm.fetches {
		write(fmt.Sprintf("fetch-%d", f.id), f.args(rm), f.code, f.stdout, f.stderr)
	}
}

func runInvocation(r *repo, refretry string, inv *invocation) {
	args := []string{"--timeout", "60s", "-C", r.dir}
	if inv.coalesce {
		args = append(args, "--coalesce")
	}
	args = append(args, inv.args()...)
	inv.code, inv.stdout, inv.stderr = runRefretry(r, refretry, args, inv.input())
}

// runRefretry runs refretry on r with r's git.
func runRefretry(r *repo, refretry string, args []string, stdin string) (code int, stdout, stderr string) {
	cmd := exec.Command(refretry, args...)
	cmd.Env = append(r.env[:len(r.env):len(r.env)], "REFRETRY_GIT="+r.git)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
		errOut.WriteString("soak: " + err.Error())
	}
	return code, out.String(), errOut.String()
}

// failureClass names why an invocation failed, from its stderr.
func failureClass(s string) string {
	switch {
	case strings.Contains(s, "refretry: gave up"):
		return "gave-up"
	case strings.Contains(s, "refretry: stale lock"):
		return "stale-lock"
	case strings.Contains(s, "verifying symref target"):
		return "symref-target-mismatch"
	case strings.Contains(s, " but expected "):
		return "cas-mismatch"
	case strings.Contains(s, "unable to resolve reference"), strings.Contains(s, "reference is missing"):
		return "ref-missing"
	case strings.Contains(s, "reference already exists"):
		return "ref-exists"
	case strings.Contains(s, "(non-fast-forward)"):
		return "non-fast-forward"
	case strings.Contains(s, "couldn't find remote ref"):
		return "remote-ref-missing"
	}
	return "other"
}

// holdLocks runs a plain git transaction up to prepare, keeps it prepared for hold,
// then aborts it. A prepare that fails (another writer got there first) just ends it.
func holdLocks(r *repo, input string, hold time.Duration) {
	// It waits for its own locks as long as it takes to get them.
	cmd := exec.Command(r.git, "-c", "reftable.lockTimeout=10000", "-c", "core.filesRefLockTimeout=10000",
		"-c", "core.packedRefsTimeout=10000", "update-ref", "-m", "holder", "--stdin")
	cmd.Dir, cmd.Env = r.dir, r.env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return
	}
	if cmd.Start() != nil {
		return
	}
	io.WriteString(stdin, input)
	br := bufio.NewReader(stdout)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		if line == "prepare: ok\n" {
			time.Sleep(hold)
			io.WriteString(stdin, "abort\n")
			break
		}
	}
	stdin.Close()
	io.Copy(io.Discard, br)
	cmd.Wait()
}
