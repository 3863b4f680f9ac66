// Command push measures concurrent `refretry push` against plain `git push`: N
// processes, released together, each push their own result ref to one reftable
// file:// remote. It prints a markdown report on standard output, progress on
// standard error.
//
//	go run ./bench/push -git /path/to/git-2.55 -refretry /path/to/refretry [-pushers 50] [-trials 5]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/refretry/refretry/internal/harness/hermetic"
)

type config struct {
	git, refretry string
	pushers       int
	trials        int
	timeout       time.Duration
}

// variant is one way of pushing.
type variant struct {
	label        string
	serverConfig []string // git config for the remote, as key=value
	argv         func(cfg config, url, refspec string) []string
}

var variants = []variant{
	{"git push", nil, func(cfg config, url, refspec string) []string {
		return []string{cfg.git, "push", "-q", url, refspec}
	}},
	{"refretry push", nil, func(cfg config, url, refspec string) []string {
		return []string{cfg.refretry, "push", "-q", url, refspec}
	}},
	{"git push, server reftable.lockTimeout=5000", []string{"reftable.lockTimeout=5000"}, func(cfg config, url, refspec string) []string {
		return []string{cfg.git, "push", "-q", url, refspec}
	}},
}

type result struct {
	ok, failed int
	missing    int // exited 0 but the ref is not on the remote at the pushed commit
	wall       time.Duration
	firstErr   string
}

func main() {
	var cfg config
	flag.StringVar(&cfg.git, "git", "git", "git to benchmark (2.55, for reftable)")
	flag.StringVar(&cfg.refretry, "refretry", "", "refretry binary (required)")
	flag.IntVar(&cfg.pushers, "pushers", 50, "concurrent pushers")
	flag.IntVar(&cfg.trials, "trials", 5, "trials per variant")
	flag.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "limit per trial")
	flag.Parse()
	if cfg.refretry == "" {
		fmt.Fprintln(os.Stderr, "push bench: -refretry is required")
		os.Exit(2)
	}
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "push bench:", err)
		os.Exit(1)
	}
}

func run(cfg config) error {
	root, err := os.MkdirTemp("", "refretry-push-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	env := hermetic.Env(os.Environ(), root)
	version, err := output(env, root, cfg.git, "version")
	if err != nil {
		return err
	}
	client := filepath.Join(root, "client")
	if err := prepareClient(env, cfg, client); err != nil {
		return err
	}
	loadBefore := loadavg()
	results := make([][]result, len(variants))
	for t := range cfg.trials {
		for k := range variants {
			i := (t + k) % len(variants) // rotate the order, so noise hits each alike
			res, err := trial(env, cfg, root, client, variants[i], t)
			if err != nil {
				return fmt.Errorf("%s, trial %d: %w", variants[i].label, t+1, err)
			}
			fmt.Fprintf(os.Stderr, "trial %d/%d %s: %d/%d ok in %.2f s\n", t+1, cfg.trials, variants[i].label, res.ok, cfg.pushers, res.wall.Seconds())
			results[i] = append(results[i], res)
		}
	}
	report(cfg, fmt.Sprintf("%s, %d CPUs, load average %s before and %s after", version, runtime.NumCPU(), loadBefore, loadavg()), results)
	return nil
}

// prepareClient makes one repository with a distinct commit per pusher on branch
// job/<i>, as matrix jobs each have their own result.
func prepareClient(env []string, cfg config, dir string) error {
	if _, err := output(env, filepath.Dir(dir), cfg.git, "init", "-q", "-b", "main", dir); err != nil {
		return err
	}
	if _, err := output(env, dir, cfg.git, "commit", "-q", "--allow-empty", "-m", "base"); err != nil {
		return err
	}
	var in strings.Builder
	for i := range cfg.pushers {
		oid, err := output(env, dir, cfg.git, "commit-tree", "-p", "HEAD", "-m", fmt.Sprintf("result of job %d", i), "HEAD^{tree}")
		if err != nil {
			return err
		}
		fmt.Fprintf(&in, "create refs/heads/job/%d %s\n", i, oid)
	}
	cmd := exec.Command(cfg.git, "update-ref", "--stdin")
	cmd.Dir, cmd.Env, cmd.Stdin = dir, env, strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("update-ref: %v: %s", err, out)
	}
	return nil
}

// trial pushes every job's branch to refs/ci/job/<i> of a fresh reftable remote that
// already has the base commit, with all pushers released at once.
func trial(env []string, cfg config, root, client string, v variant, t int) (result, error) {
	remote := filepath.Join(root, fmt.Sprintf("remote-%d-%d.git", t, slices.IndexFunc(variants, func(x variant) bool { return x.label == v.label })))
	if _, err := output(env, root, cfg.git, "init", "-q", "--bare", "--ref-format=reftable", remote); err != nil {
		return result{}, err
	}
	defer os.RemoveAll(remote)
	for _, kv := range v.serverConfig {
		k, val, _ := strings.Cut(kv, "=")
		if _, err := output(env, remote, cfg.git, "config", k, val); err != nil {
			return result{}, err
		}
	}
	url := "file://" + remote
	if _, err := output(env, client, cfg.git, "push", "-q", url, "main"); err != nil {
		return result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	gate := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var res result
	var last time.Time
	codes := make([]int, cfg.pushers)
	for i := range cfg.pushers {
		argv := v.argv(cfg, url, fmt.Sprintf("refs/heads/job/%d:refs/ci/job/%d", i, i))
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = client
		cmd.Env = append(slices.Clip(env), "REFRETRY_GIT="+cfg.git)
		cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
		var stderr strings.Builder
		cmd.Stderr = &stderr
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			err := cmd.Run()
			now := time.Now()
			mu.Lock()
			defer mu.Unlock()
			if now.After(last) {
				last = now
			}
			if err != nil {
				codes[i] = 1
				res.failed++
				if res.firstErr == "" {
					res.firstErr = rejection(stderr.String())
				}
				return
			}
			res.ok++
		}()
	}
	start := time.Now()
	close(gate)
	wg.Wait()
	res.wall = last.Sub(start)
	out, err := output(env, remote, cfg.git, "for-each-ref", "--format=%(refname) %(objectname)", "refs/ci/")
	if err != nil {
		return res, err
	}
	landed := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if name, oid, ok := strings.Cut(line, " "); ok {
			landed[name] = oid
		}
	}
	for i, code := range codes {
		if code != 0 {
			continue
		}
		want, err := output(env, client, cfg.git, "rev-parse", fmt.Sprintf("refs/heads/job/%d", i))
		if err != nil {
			return res, err
		}
		if landed[fmt.Sprintf("refs/ci/job/%d", i)] != want {
			res.missing++
		}
	}
	return res, nil
}

func report(cfg config, setting string, results [][]result) {
	fmt.Printf("## refretry push: %d concurrent pushers, one reftable file:// remote\n\n", cfg.pushers)
	fmt.Printf("%s; %d trials per variant, interleaved. Each pusher pushes its own commit to `refs/ci/job/<i>`; "+
		"all are released at once; wall time runs from the release to the last exit. "+
		"\"landed\" counts pushers that exited 0 and whose ref is on the remote at their commit.\n\n", setting, cfg.trials)
	fmt.Println("| variant | landed per trial | all landed | wall time per trial (s) | median wall (s) |")
	fmt.Println("|---|---|--:|---|--:|")
	for i, v := range variants {
		var landed, walls []string
		var ws []float64
		full := 0
		for _, r := range results[i] {
			landed = append(landed, fmt.Sprintf("%d/%d", r.ok-r.missing, cfg.pushers))
			walls = append(walls, fmt.Sprintf("%.2f", r.wall.Seconds()))
			ws = append(ws, r.wall.Seconds())
			if r.ok-r.missing == cfg.pushers {
				full++
			}
		}
		slices.Sort(ws)
		fmt.Printf("| %s | %s | %d/%d | %s | %.2f |\n", v.label, strings.Join(landed, ", "), full, len(results[i]),
			strings.Join(walls, ", "), ws[len(ws)/2])
	}
	fmt.Println()
	for i, v := range variants {
		for t, r := range results[i] {
			if r.firstErr != "" {
				fmt.Printf("- %s, trial %d, first failure: `%s`\n", v.label, t+1, r.firstErr)
				break
			}
		}
	}
}

func output(env []string, dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.String())
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// rejection is the line of a failed push that says why: the rejected ref, or else the
// last line.
func rejection(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for _, l := range lines {
		if strings.Contains(l, "[remote rejected]") || strings.Contains(l, "[rejected]") {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// loadavg is the 1-minute load average, for the report: other work on the machine
// moves the wall times.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}
