package cli

import (
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"
)

// parseWithKong parses refretry's options and command word as Run's kong path does.
func parseWithKong(t *testing.T, args []string) (*CLI, *kong.Context, string, error) {
	t.Helper()
	var cli CLI
	var help strings.Builder
	parser, err := kong.New(&cli, kong.Name("refretry"), kong.Exit(func(int) {}),
		kong.Writers(&help, &help), kong.PostBuild(describe))
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := parser.Parse(args)
	return &cli, kctx, help.String(), err
}

// TestFastOptionsMatchKong: the kong-free path reads every command line it accepts
// exactly as kong does, and hands kong what it does not accept.
func TestFastOptionsMatchKong(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		fast bool // taken by the fast path; otherwise left to kong
	}{
		{[]string{}, true},
		{[]string{"-C", "/tmp/a"}, true},
		{[]string{"-C/tmp/a", "-C", "b", "--directory=c", "--directory", "d=e"}, true},
		{[]string{"--timeout", "5s", "--max-attempts=3", "--initial-delay", "1ms", "--max-delay=2s"}, true},
		{[]string{"--stale-after", "1m", "--git", "/usr/bin/git", "--log-format=json", "--log-file", "/tmp/x.log"}, true},
		{[]string{"--pid-grace", "30s", "--stale-after=5m", "--pid-grace=1m"}, true},
		{[]string{"--timeout=1s", "--timeout", "2s"}, true}, // the last one wins
		{[]string{"--coalesce", "--break-stale-locks", "--timeout", "-"}, true},
		{[]string{"--timeout="}, true},
		{[]string{"--help"}, false},
		{[]string{"--timeout", "--max-attempts=3"}, false},
		{[]string{"-C", "-x"}, false},
	}
	for _, tc := range cases {
		own, _, rest := splitArgs(append(slices.Clone(tc.args), "refs/heads/x", "0123"))
		if strings.Join(rest, " ") != "refs/heads/x 0123" {
			t.Fatalf("%q: splitArgs left %q", tc.args, rest)
		}
		fast, ok := fastOptions(own)
		if ok != tc.fast {
			t.Errorf("%q: fast path took it = %v, want %v", tc.args, ok, tc.fast)
			continue
		}
		if !ok {
			continue
		}
		cli, _, help, err := parseWithKong(t, append(own, "update-ref"))
		if err != nil || help != "" {
			t.Errorf("%q: fast path accepted what kong rejects (%v)", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(*fast, cli.Options) {
			t.Errorf("%q:\nfast %+v\nkong %+v", tc.args, *fast, cli.Options)
		}
	}
}

// TestOptionTableMatchesKong: the spellings the fast path and splitArgs derive from
// Options are kong's, one for one, and every option with a setting has a parser.
func TestOptionTableMatchesKong(t *testing.T) {
	t.Parallel()
	_, kctx, _, err := parseWithKong(t, []string{"version"})
	if err != nil {
		t.Fatal(err)
	}
	var kongNames []string
	for _, f := range kctx.Model.Flags {
		if f.Name != "help" {
			kongNames = append(kongNames, "--"+f.Name)
			if f.Short != 0 {
				kongNames = append(kongNames, "-"+string(f.Short))
			}
		}
	}
	var ours []string
	for _, o := range optionTable() {
		ours = append(ours, o.name)
		if o.short != "" {
			ours = append(ours, o.short)
		}
		if o.target >= 0 {
			var v Values
			_ = o.parse(&v, "1") // panics when the option's type has no parser
		}
		if o.envVar != "" && o.target < 0 {
			t.Errorf("%s has an environment variable but no field in Values", o.name)
		}
	}
	slices.Sort(kongNames)
	slices.Sort(ours)
	if !slices.Equal(kongNames, ours) {
		t.Errorf("option spellings:\nkong %q\nours %q", kongNames, ours)
	}
}

// TestHelp: --help prints one usage line, and each option's environment variable,
// git config key and default as Options and the libraries declare them.
func TestHelp(t *testing.T) {
	t.Parallel()
	_, _, help, _ := parseWithKong(t, []string{"--help"})
	if n := strings.Count(help, "Usage:"); n != 1 {
		t.Errorf("--help has %d Usage: lines:\n%s", n, help)
	}
	flat := strings.Join(strings.Fields(help), " ")
	def := defaults()
	for _, want := range []string{
		"env REFRETRY_TIMEOUT, config refretry.timeout; default " + def.Timeout.String(),
		"env REFRETRY_MAX_ATTEMPTS, config refretry.maxAttempts; default " + strconv.Itoa(def.MaxAttempts),
		"env REFRETRY_STALE_AFTER, config refretry.staleAfter; default " + def.StaleAfter.String(),
		"env REFRETRY_PID_GRACE, config refretry.pidGrace; default: --stale-after)",
		"env REFRETRY_BREAK_STALE_LOCKS=1, config refretry.breakStaleLocks)",
		"env REFRETRY_GIT; default: git on PATH",
		"env REFRETRY_LOG_FORMAT, config refretry.logFormat; default auto",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("--help lacks %q:\n%s", want, help)
		}
	}
	_, _, pushHelp, _ := parseWithKong(t, []string{"push", "--help"})
	for _, want := range []string{"--no-atomic", "--rebase"} {
		if !strings.Contains(pushHelp, want) {
			t.Errorf("push --help lacks %s:\n%s", want, pushHelp)
		}
	}
}

// TestPIDGrace: --pid-grace resolves as every option does (flag > environment > git
// config), defaults to 0 (the --stale-after limit), and rejects what is not a
// non-negative duration.
func TestPIDGrace(t *testing.T) {
	t.Parallel()
	cfg := map[string]string{"refretry.pidgrace": "3m"}
	cases := []struct {
		flag, env string
		cfg       map[string]string
		want      time.Duration
	}{
		{"", "", nil, 0},
		{"", "", cfg, 3 * time.Minute},
		{"", "2m", cfg, 2 * time.Minute},
		{"1m", "2m", cfg, time.Minute},
		{"0", "", cfg, 0},
	}
	for _, tc := range cases {
		var env []string
		if tc.env != "" {
			env = []string{"REFRETRY_PID_GRACE=" + tc.env}
		}
		v, set, err := given(&Options{PIDGrace: tc.flag}, env)
		if err == nil {
			v, err = withConfig(v, set, tc.cfg)
		}
		if err != nil || v.PIDGrace != tc.want {
			t.Errorf("flag %q, env %q, config %v: %v (%v), want %v", tc.flag, tc.env, tc.cfg, v.PIDGrace, err, tc.want)
		}
	}
	if _, _, err := given(&Options{PIDGrace: "-1s"}, nil); err == nil || err.Error() != `--pid-grace "-1s": not a non-negative duration such as 500ms, 30s or 2m` {
		t.Errorf("--pid-grace -1s: %v", err)
	}
}
