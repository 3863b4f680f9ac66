package cli

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// splitArgs is readLine's split of args: refretry's options as given, the command
// word, the command's arguments.
func splitArgs(args []string) (own []string, word string, rest []string) {
	l := readLine(args)
	return l.own, l.word, l.rest
}

// run runs refretry with args and env, no git needed (--help, usage errors).
func run(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut strings.Builder
	code = Run(context.Background(), args, Streams{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}, env)
	return out.String(), errOut.String(), code
}

// TestReadLine: what the reader makes of refretry's options, the command word and the
// command's arguments, and which shapes it leaves to kong.
func TestReadLine(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args  []string
		read  bool
		dirs  []string
		flags map[string]string
		word  string
		rest  []string
	}{
		{nil, true, nil, nil, "", nil},
		{[]string{"-C", "/tmp/a", "refs/heads/x", "0"}, true, []string{"/tmp/a"}, nil, "", []string{"refs/heads/x", "0"}},
		{[]string{"-C/tmp/a", "-C", "b", "--directory=c", "--directory", "d=e", "-C=f", "x"}, true, []string{"/tmp/a", "b", "c", "d=e", "=f"}, nil, "", []string{"x"}},
		{[]string{"--timeout", "5s", "--max-attempts=3", "--initial-delay", "1ms", "--max-delay=2s", "update-ref", "-d", "x"}, true, nil,
			map[string]string{"--timeout": "5s", "--max-attempts": "3", "--initial-delay": "1ms", "--max-delay": "2s"}, "update-ref", []string{"-d", "x"}},
		{[]string{"--timeout=1s", "--timeout", "2s", "--log-format=json", "push", "origin"}, true, nil,
			map[string]string{"--timeout": "2s", "--log-format": "json"}, "push", []string{"origin"}},
		{[]string{"--coalesce", "--break-stale-locks", "--timeout", "-", "version"}, true, nil,
			map[string]string{"--coalesce": "true", "--break-stale-locks": "true", "--timeout": "-"}, "version", nil},
		{[]string{"--timeout=", "--git", "version", "x"}, true, nil, map[string]string{"--timeout": "", "--git": "version"}, "", []string{"x"}},
		{[]string{"--coalesce=1", "x"}, true, nil, nil, "", []string{"--coalesce=1", "x"}},
		{[]string{"--frob", "version"}, true, nil, nil, "", []string{"--frob", "version"}},
		{[]string{"--", "version"}, true, nil, nil, "", []string{"--", "version"}},
		{[]string{"shim", "install", "--dir", "d"}, true, nil, nil, "shim", []string{"install", "--dir", "d"}},
		// Left to kong.
		{[]string{"--help", "push", "--help"}, false, nil, nil, "push", []string{"--help"}},
		{[]string{"--timeout", "--max-attempts=3", "x"}, false, nil, map[string]string{"--timeout": "--max-attempts=3"}, "", []string{"x"}},
		{[]string{"-C", "-x", "version"}, false, []string{"-x"}, nil, "version", nil},
		{[]string{"-C-x"}, false, []string{"-x"}, nil, "", nil},
		{[]string{"--pid-grace", "-1s"}, false, nil, map[string]string{"--pid-grace": "-1s"}, "", nil},
		{[]string{"--timeout"}, false, nil, nil, "", nil},
	}
	for _, tc := range cases {
		l := readLine(tc.args)
		if l.read != tc.read || !slices.Equal(l.dirs, tc.dirs) || !maps.Equal(l.flags, tc.flags) ||
			l.word != tc.word || !slices.Equal(l.rest, tc.rest) {
			t.Errorf("%q: read %v, dirs %q, flags %q, word %q, rest %q", tc.args, l.read, l.dirs, l.flags, l.word, l.rest)
		}
	}
}

// TestLeftToKong: what the reader leaves to kong, kong answers with its help or a usage
// error (exit 129), never by running a command.
func TestLeftToKong(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--timeout"},
		{"--timeout", "--help"},
		{"--timeout", "--", "refs/heads/x"},
		{"--stale-after", "-1s", "version"},
		{"-C", "-x", "refs/heads/x"},
		{"-C-x", "push", "origin"},
		{"-C"},
		{"--help", "--timeout"},
		{"--timeout", "-x", "--help"},
		{"--timeout", "-x", "shim", "install"},
		{"--coalesce", "--help", "gather"},
	} {
		if l := readLine(args); l.read {
			t.Errorf("%q: read", args)
			continue
		}
		stdout, stderr, code := run(t, nil, args...)
		usage := code == exitUsage && stdout == "" && strings.HasPrefix(stderr, "refretry: ") && strings.Count(stderr, "\n") == 1
		help := code == 0 && strings.HasPrefix(stdout, "Usage: refretry") && stderr == ""
		if !usage && !help || strings.Contains(stderr, "cannot read the options") {
			t.Errorf("%q: exit %d\nstdout %s\nstderr %s", args, code, stdout, stderr)
		}
	}
	if _, stderr, _ := run(t, nil, "--timeout"); stderr != "refretry: --timeout: expected string value but got \"EOL\" (<EOL>)\n" {
		t.Errorf("--timeout: %s", stderr)
	}
}

// TestCommands: the command list and each command's way with its arguments, as CLI
// declares them.
func TestCommands(t *testing.T) {
	t.Parallel()
	var got []string
	for _, c := range commandTable() {
		kind := map[[2]bool]string{{true, false}: "git", {false, true}: "kong", {false, false}: "none"}[[2]bool{c.gitArgs, c.kongArgs}]
		got = append(got, c.name+":"+kind+map[bool]string{true: ":default"}[c.isDefault])
	}
	want := []string{"update-ref:git:default", "push:git", "fetch:git", "version:none", "shim:kong", "gather:kong"}
	if !slices.Equal(got, want) {
		t.Errorf("commands %q, want %q", got, want)
	}
	if _, stderr, code := run(t, nil, "version", "extra"); code != exitUsage || stderr != "refretry: version takes no arguments\n" {
		t.Errorf("version extra: exit %d, %s", code, stderr)
	}
}

// TestBadOptionValue: a bad value of one of refretry's options, on the command line or
// in the environment, is a usage error (exit 129, one line naming where it came from)
// for every command, before any git runs (the shim's commands run none, but
// take the same options).
func TestBadOptionValue(t *testing.T) {
	t.Parallel()
	// A command that let the value pass would run git: not in this repository.
	nowhere := t.TempDir()
	shimDir := filepath.Join(nowhere, "shim")
	commands := [][]string{
		{"refs/heads/x", "HEAD"},
		{"update-ref", "refs/heads/x", "HEAD"},
		{"push", "origin", "main"},
		{"fetch", "origin"},
		{"version"},
		{"gather", "list", "origin", "main"},
		{"gather", "land", "origin", "main"},
		{"gather", "discard", "origin", "main", "0193"},
		{"shim", "install", "--dir", shimDir},
		{"shim", "uninstall", "--dir", shimDir},
	}
	for _, args := range commands {
		for _, bad := range []struct {
			env, flags []string
			want       string
		}{
			{nil, []string{"--timeout", "soon"}, `--timeout "soon"`},
			{[]string{"REFRETRY_TIMEOUT=soon"}, nil, `REFRETRY_TIMEOUT="soon"`},
		} {
			// gather land, letting the value pass, would wait on the remote that is not
			// there: the deadline ends it, failing here.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			var out, errOut strings.Builder
			line := append(append([]string{"-C", nowhere}, bad.flags...), args...)
			code := Run(ctx, line, Streams{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}, bad.env)
			cancel()
			stdout, stderr := out.String(), errOut.String()
			want := "refretry: " + bad.want + ": not a non-negative duration such as 500ms, 30s or 2m\n"
			if code != exitUsage || stdout != "" || stderr != want {
				t.Errorf("%q %q: exit %d, stdout %q, stderr %q; want 129 and %q", bad.env, args, code, stdout, stderr, want)
			}
		}
	}
}

// TestOptionTable: every option that is a setting has a parser for its type, and an
// option with a git config key has an environment variable; push's own are neither,
// have a parser for their type too and name their usage line.
func TestOptionTable(t *testing.T) {
	t.Parallel()
	for _, o := range optionTable() {
		if o.cmd == "push" {
			if o.envVar != "" || o.config != "" || o.short != "" || o.form != "push" && o.form != "gather" && o.form != "api" {
				t.Errorf("%s: push's options are spelled long, have no environment variable or git config key, and name their form", o.name)
			}
			if !o.isBool {
				var v PushOptions
				_ = setPushValue(o.field(&v), o.name, "1") // panics when the option's type has no parser
			}
			continue
		}
		if o.envVar == "" {
			if o.config != "" || !o.isList {
				t.Errorf("%s: only -C may have no environment variable", o.name)
			}
			continue
		}
		var v Options
		_ = o.parse(&v, "1") // panics when the option's type has no parser
	}
}

// TestHelp: --help prints one usage line, and each option's environment variable,
// git config key and default as Options and the libraries declare them.
func TestHelp(t *testing.T) {
	t.Parallel()
	help, _, code := run(t, nil, "--help")
	if n := strings.Count(help, "Usage:"); n != 1 || code != 0 {
		t.Errorf("--help (exit %d) has %d Usage: lines:\n%s", code, n, help)
	}
	flat := strings.Join(strings.Fields(help), " ")
	def := defaults()
	for _, want := range []string{
		"-C, --directory=PATH Run as if started in PATH (repeatable, as git -C).",
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
	for _, args := range [][]string{{"push", "--help"}, {"push", "origin", "--help", "--", "x"}} {
		pushHelp, _, _ := run(t, nil, args...)
		flat := strings.Join(strings.Fields(pushHelp), " ")
		for _, want := range []string{"Usage: refretry push", "--no-atomic", "--rebase", "--regenerate=COMMAND",
			"--gather-max=N Staged commits one gather takes at most (forges cap the refs one push updates) (default 64).",
			"--gather-lease=DURATION", "after each take-over it makes (default 30s).", "--gather-key-file=FILE",
			"--gather-max-age=DURATION", "named in a note) (default 168h0m0s)."} {
			if !strings.Contains(flat, want) {
				t.Errorf("%q lacks %s:\n%s", args, want, pushHelp)
			}
		}
	}
}

// TestUsage: --help opens with refretry's forms, push's three with every option
// PushOptions declares, in its order.
func TestUsage(t *testing.T) {
	t.Parallel()
	help, _, _ := run(t, nil, "--help")
	want := `Usage: refretry [options] <git update-ref arguments>
       refretry [options] update-ref <git update-ref arguments>
       refretry [options] push [--no-atomic] [--rebase] [--regenerate COMMAND] <git push arguments>
       refretry [options] push --gather [--gather-max N] [--gather-lease DURATION] [--gather-key-file FILE] [--gather-max-age DURATION] [--no-wait] <remote> [<src>:]<branch>
       refretry [options] push --api [--forge FORGE] <remote> [<src>:]<branch>
       refretry [options] gather list|land|discard [--key-file FILE] <remote> <branch> [<id>...]
       refretry [options] fetch <git fetch arguments>
       refretry version
       refretry shim install|uninstall [--dir DIR]
`
	if !strings.HasPrefix(help, want) {
		t.Errorf("--help begins\n%s\nwant\n%s", help[:min(len(help), len(want))], want)
	}
}

// TestResolve: every option resolves flag > caller > environment > git config >
// default, a bad value is named after where it came from, and --pid-grace defaults to
// 0 (the --stale-after limit).
func TestResolve(t *testing.T) {
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
		v, set, err := given(&Options{}, map[string]string{"--pid-grace": tc.flag}, env)
		if err == nil {
			v, err = withConfig(v, set, tc.cfg)
		}
		if err != nil || v.PIDGrace != tc.want {
			t.Errorf("flag %q, env %q, config %v: %v (%v), want %v", tc.flag, tc.env, tc.cfg, v.PIDGrace, err, tc.want)
		}
	}
	if _, _, err := given(&Options{}, map[string]string{"--pid-grace": "-1s"}, nil); err == nil || err.Error() != `--pid-grace "-1s": not a non-negative duration such as 500ms, 30s or 2m` {
		t.Errorf("--pid-grace -1s: %v", err)
	}
	if _, _, err := given(&Options{}, nil, []string{"REFRETRY_COALESCE=maybe"}); err == nil || err.Error() != `REFRETRY_COALESCE="maybe": not a boolean such as 1, true, 0 or false` {
		t.Errorf("REFRETRY_COALESCE=maybe: %v", err)
	}
	// The shim sets --git as a caller: it beats REFRETRY_GIT.
	v, set, err := given(&Options{Dirs: []string{"d"}, Git: "/shim/git"}, nil, []string{"REFRETRY_GIT=/env/git", "REFRETRY_MAX_ATTEMPTS=7"})
	if err != nil || v.Git != "/shim/git" || !set["--git"] || v.MaxAttempts != 7 || !slices.Equal(v.Dirs, []string{"d"}) {
		t.Errorf("shim: %+v %v %v", v, set, err)
	}
}
