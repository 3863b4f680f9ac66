// Command bench measures refretry side by side with plain git update-ref
// and plain git fetch, and prints a markdown report on standard output
// (progress goes to standard error). See README.md in this directory.
//
//	go run ./bench -git /path/to/git-2.55 -refretry /path/to/refretry [-old-git /path/to/git-2.39] [-quick]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// config is the parsed command line.
type config struct {
	git        string
	refretry   string
	trials     int
	writers    intList
	batches    intList
	singleRuns int
	memberRuns int // invocations per round of the group-commit member measurement
	only       string
	out        string
	timeout    time.Duration
	variants   nameList  // concurrency variants to run; empty means all
	charts     string    // directory for the SVG charts; empty means none
	extras     extraList // more refretry binaries for the single-update rotation and the member rounds
	rrExtras   extraList // more refretry binaries for the concurrency phase
	fetchers   intList   // concurrent fetch counts
	oldGit     string    // the older git of the fetch phase (files backend only)
	oldGitSkip string    // why oldGit cannot be used; empty when it can
	matrix     matrixConfig
}

// matrixConfig is the matrix phase's part of the command line.
type matrixConfig struct {
	jobs        intList  // concurrent job counts
	modes       nameList // what the jobs write (matrixModes)
	methods     nameList // how they push (matrixMethods)
	servers     nameList // what they push to (matrixServerNames)
	checkout    string   // the checkout form (matrixCheckouts)
	pushTimeout time.Duration
	jobTimeout  time.Duration
	trials      int // 0 means -trials; -quick sets 1
	// latency is the forge latency mode (-matrix-latency): every request to
	// the server delayed by a round trip, rtt (-matrix-rtt) or
	// defaultRoundTrip; see roundTrips.
	latency bool
	rtt     durationList
}

// wants reports whether the phase named phase should run.
func (c config) wants(phase string) bool {
	return c.only == "" || c.only == phase
}

// wantsVariant reports whether the concurrency variant named name should run.
func (c config) wantsVariant(name string) bool {
	return len(c.variants) == 0 || slices.Contains(c.variants, name)
}

func main() {
	if os.Getenv(gateEnv) == "1" {
		os.Exit(gateMain(os.Args[1:]))
	}
	os.Exit(realMain())
}

func realMain() int {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

func parseFlags(args []string, errOut io.Writer) (config, error) {
	cfg := config{
		trials:     5,
		writers:    intList{150, 300, 600},
		batches:    intList{10000, 100000, 1000000},
		singleRuns: 200,
		memberRuns: 20,
		timeout:    10 * time.Minute,
		fetchers:   intList{16, 32, 64},
		oldGit:     "git",
		matrix: matrixConfig{
			jobs:        intList{16, 64, 128},
			modes:       matrixModeNames(),
			methods:     matrixMethodNames(),
			servers:     slices.Clone(matrixServerNames),
			checkout:    "detached",
			pushTimeout: 0, // refretry's own defaults (a budget of time without progress)
			jobTimeout:  5 * time.Minute,
		},
	}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.StringVar(&cfg.git, "git", "", "path to git 2.55 (required)")
	fs.StringVar(&cfg.refretry, "refretry", "", "path to the refretry binary (required)")
	fs.IntVar(&cfg.trials, "trials", cfg.trials, "trials per measurement")
	fs.Var(&cfg.writers, "writers", "comma-separated concurrent writer counts")
	fs.Var(&cfg.batches, "batches", "comma-separated --stdin batch sizes")
	fs.IntVar(&cfg.singleRuns, "single-runs", cfg.singleRuns, "single-update calls per tool and backend")
	fs.IntVar(&cfg.memberRuns, "member-runs", cfg.memberRuns, "invocations per round of the group-commit member measurement (the first of each round leads)")
	fs.Var(&cfg.fetchers, "fetchers", "comma-separated concurrent fetch counts")
	fs.StringVar(&cfg.oldGit, "old-git", cfg.oldGit, "an older git (2.39) for the fetch phase's files rows; skipped when not found")
	fs.Var(&cfg.matrix.jobs, "matrix-jobs", "comma-separated concurrent matrix job counts")
	fs.Var(&cfg.matrix.modes, "matrix-modes", "comma-separated matrix modes: "+strings.Join(matrixModeNames(), ","))
	fs.Var(&cfg.matrix.methods, "matrix-methods", "comma-separated matrix methods (default all: "+strings.Join(matrixMethodNames(), ",")+")")
	fs.Var(&cfg.matrix.servers, "matrix-servers", "comma-separated servers the matrix jobs push to: "+strings.Join(matrixServerNames, ",")+" (gitea is skipped, with the reason, without a Gitea binary)")
	fs.StringVar(&cfg.matrix.checkout, "matrix-checkout", cfg.matrix.checkout, "the matrix jobs' checkout: "+strings.Join(matrixCheckoutNames(), ", "))
	fs.DurationVar(&cfg.matrix.pushTimeout, "matrix-push-timeout", cfg.matrix.pushTimeout, "refretry's --timeout in the matrix jobs (0: none given, refretry's default budget)")
	fs.DurationVar(&cfg.matrix.jobTimeout, "matrix-job-timeout", cfg.matrix.jobTimeout, "per matrix job process timeout")
	fs.BoolVar(&cfg.matrix.latency, "matrix-latency", false, "forge latency model: delay every HTTP request to the matrix servers by a round trip, -matrix-rtt ("+defaultRoundTrip.String()+" unless given)")
	fs.Var(&cfg.matrix.rtt, "matrix-rtt", "comma-separated round trips the matrix servers run under, each in turn (0 is no delay, the CPU-bound run); implies -matrix-latency")
	quick := fs.Bool("quick", false, "smoke-run sizes: writers 20,40, batches 1000, fetchers 2, trials 2, single-runs 20; matrix: 4 jobs, 1 trial, http only")
	fs.StringVar(&cfg.only, "only", "", "run only `concurrency`, `overhead`, `fetch` or `matrix` (default all)")
	fs.StringVar(&cfg.out, "out", "", "also write the markdown report to this file")
	fs.DurationVar(&cfg.timeout, "timeout", cfg.timeout, "per child process timeout")
	fs.Var(&cfg.variants, "variants", "comma-separated concurrency variants to run (default all: "+strings.Join(variantNames, ",")+")")
	fs.StringVar(&cfg.charts, "charts", "", "write SVG charts of the concurrency phase into this `directory`")
	fs.Var(&cfg.extras, "single-extra", "add a refretry binary to the single-update rotation and the member rounds, as `label=path` (repeatable)")
	fs.Var(&cfg.rrExtras, "concurrency-extra", "add a refretry binary to the concurrency phase, as `label=path`, run as the refretry variant is (repeatable)")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if *quick {
		applyQuick(&cfg, setFlags(fs))
	}
	if err := cfg.validate(); err != nil {
		return config{}, err
	}
	return cfg, cfg.resolvePaths()
}

// setFlags returns the names of the flags given on the command line.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

// applyQuick shrinks the sizes for a smoke run; flags given explicitly win.
func applyQuick(cfg *config, set map[string]bool) {
	if !set["writers"] {
		cfg.writers = intList{20, 40}
	}
	if !set["batches"] {
		cfg.batches = intList{1000}
	}
	if !set["fetchers"] {
		cfg.fetchers = intList{2}
	}
	if !set["trials"] {
		cfg.trials = 2
	}
	if !set["single-runs"] {
		cfg.singleRuns = 20
	}
	if !set["member-runs"] {
		cfg.memberRuns = 4
	}
	if !set["matrix-jobs"] {
		cfg.matrix.jobs = intList{4}
	}
	if !set["matrix-servers"] {
		cfg.matrix.servers = nameList{"http"}
	}
	if !set["trials"] {
		cfg.matrix.trials = 1
	}
}

func (c config) validate() error {
	switch {
	case c.git == "":
		return errors.New("-git is required")
	case c.refretry == "":
		return errors.New("-refretry is required")
	case c.trials < 1:
		return errors.New("-trials must be at least 1")
	case c.singleRuns < 1:
		return errors.New("-single-runs must be at least 1")
	case c.memberRuns < 2:
		return errors.New("-member-runs must be at least 2: the first of each round leads")
	case len(c.writers) == 0 || len(c.batches) == 0 || len(c.fetchers) == 0:
		return errors.New("-writers, -batches and -fetchers must not be empty")
	case c.timeout <= 0:
		return errors.New("-timeout must be positive")
	}
	for _, e := range c.rrExtras {
		if slices.Contains(variantNames, e.label) {
			return fmt.Errorf("-concurrency-extra: label %q is a variant's name", e.label)
		}
	}
	for _, v := range c.variants {
		if !slices.Contains(variantNames, v) {
			return fmt.Errorf("-variants: unknown variant %q (known: %s)", v, strings.Join(variantNames, ","))
		}
	}
	if err := c.validateMatrix(); err != nil {
		return err
	}
	switch c.only {
	case "", "concurrency", "overhead", "fetch", "matrix":
		return nil
	}
	return fmt.Errorf("-only must be concurrency, overhead, fetch or matrix, not %q", c.only)
}

// resolvePaths makes the executables absolute, since children run in
// other directories. An old git that cannot be found is not an error: the
// fetch rows that need it are skipped, with the reason.
func (c *config) resolvePaths() error {
	var err error
	if c.git, err = resolveExe(c.git); err != nil {
		return fmt.Errorf("-git: %w", err)
	}
	if c.refretry, err = resolveExe(c.refretry); err != nil {
		return fmt.Errorf("-refretry: %w", err)
	}
	if p, err := resolveExe(c.oldGit); err != nil {
		c.oldGitSkip = fmt.Sprintf("-old-git %s: %v", c.oldGit, err)
	} else {
		c.oldGit = p
	}
	for i := range c.extras {
		if c.extras[i].path, err = resolveExe(c.extras[i].path); err != nil {
			return fmt.Errorf("-single-extra %s: %w", c.extras[i].label, err)
		}
	}
	for i := range c.rrExtras {
		if c.rrExtras[i].path, err = resolveExe(c.rrExtras[i].path); err != nil {
			return fmt.Errorf("-concurrency-extra %s: %w", c.rrExtras[i].label, err)
		}
	}
	return nil
}

func resolveExe(name string) (string, error) {
	p, err := exec.LookPath(name)
	if err != nil {
		return "", err
	}
	return filepath.Abs(p)
}

// intList is a flag.Value holding comma-separated positive integers.
type intList []int

func (l *intList) String() string {
	parts := make([]string, len(*l))
	for i, v := range *l {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

func (l *intList) Set(s string) error {
	var out intList
	for part := range strings.SplitSeq(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil {
			return err
		}
		if v < 1 {
			return fmt.Errorf("%d is not positive", v)
		}
		out = append(out, v)
	}
	*l = out
	return nil
}

// durationList is a flag.Value holding comma-separated durations.
type durationList []time.Duration

func (l *durationList) String() string {
	parts := make([]string, len(*l))
	for i, d := range *l {
		parts[i] = d.String()
	}
	return strings.Join(parts, ",")
}

func (l *durationList) Set(s string) error {
	var out durationList
	for part := range strings.SplitSeq(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(part))
		if err != nil {
			return err
		}
		out = append(out, d)
	}
	*l = out
	return nil
}

// nameList is a flag.Value holding comma-separated names.
type nameList []string

func (l *nameList) String() string { return strings.Join(*l, ",") }

func (l *nameList) Set(s string) error {
	var out nameList
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return errors.New("empty name")
		}
		out = append(out, part)
	}
	*l = out
	return nil
}

// extraBin is one more refretry binary for the single-update rotation.
type extraBin struct{ label, path string }

// extraList is a repeatable flag.Value of label=path pairs.
type extraList []extraBin

func (l *extraList) String() string {
	parts := make([]string, len(*l))
	for i, e := range *l {
		parts[i] = e.label + "=" + e.path
	}
	return strings.Join(parts, " ")
}

// reservedLabels name the rows the single-update table always has.
var reservedLabels = []string{"git update-ref", "refretry", "minimal Go wrapper"}

func (l *extraList) Set(s string) error {
	label, path, ok := strings.Cut(s, "=")
	label, path = strings.TrimSpace(label), strings.TrimSpace(path)
	switch {
	case !ok || label == "" || path == "":
		return fmt.Errorf("%q is not label=path", s)
	case slices.Contains(reservedLabels, label):
		return fmt.Errorf("label %q is taken by a built-in row", label)
	case slices.ContainsFunc(*l, func(e extraBin) bool { return e.label == label }):
		return fmt.Errorf("label %q given twice", label)
	}
	*l = append(*l, extraBin{label, path})
	return nil
}

// run executes the selected phases and emits the report. A failed phase
// is noted in the report and the remaining phases still run.
func run(ctx context.Context, cfg config) (err error) {
	root, err := os.MkdirTemp("", "refretry-bench-")
	if err != nil {
		return err
	}
	defer func() {
		if rmErr := os.RemoveAll(root); err == nil {
			err = rmErr
		}
	}()
	r, err := newRunner(ctx, cfg, root)
	if err != nil {
		return err
	}

	var report strings.Builder
	report.WriteString("# refretry benchmark\n\n")
	report.WriteString(machineSection(r, cfg))
	phases := []struct {
		name string
		run  func(*runner, config, string) (string, error)
	}{
		{"concurrency", runConcurrency},
		{"overhead", runOverhead},
		{"fetch", runFetch},
		{"matrix", runMatrix},
	}
	var phaseErr error
	for _, p := range phases {
		if !cfg.wants(p.name) {
			continue
		}
		section, err := p.run(r, cfg, root)
		report.WriteString(section)
		if err != nil {
			fmt.Fprintf(&report, "\n> **%s phase failed:** %v\n\n", p.name, err)
			phaseErr = errors.Join(phaseErr, fmt.Errorf("%s: %w", p.name, err))
		}
	}
	if err := emit(report.String(), cfg.out); err != nil {
		return err
	}
	return phaseErr
}

func emit(report, out string) error {
	if _, err := io.WriteString(os.Stdout, report); err != nil {
		return err
	}
	if out == "" {
		return nil
	}
	return os.WriteFile(out, []byte(report), 0o644)
}

// progress reports what the benchmark is doing on standard error.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
}
