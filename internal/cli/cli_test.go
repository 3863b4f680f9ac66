package cli

import (
	"context"
	"fmt"
	"go/format"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alecthomas/kong"

	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// grammar is kong's parser for cli (a new one if nil), for the tests.
func grammar(cli *CLI) *kong.Kong {
	if cli == nil {
		cli = &CLI{}
	}
	return newParser(cli, Streams{Stdout: io.Discard, Stderr: io.Discard}, func(int) {})
}

// parse reads args as Run does when it starts kong, without running the command.
func parse(args ...string) (*CLI, error) {
	var cli CLI
	at, word, complete := split(args)
	_, err := grammar(&cli).Parse(kongArgs(args, at, word, complete))
	return &cli, err
}

// run runs refretry with args and env, no git needed (--help, usage errors).
func run(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut strings.Builder
	code = Run(context.Background(), args, Streams{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut}, env)
	return out.String(), errOut.String(), code
}

// TestSplit: where refretry's options end, the command word, and what kong then
// makes of refretry's options and the command's arguments.
func TestSplit(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args  []string
		at    int
		word  string
		dirs  []string
		flags map[string]string
		rest  []string
	}{
		{nil, 0, "", nil, nil, nil},
		{[]string{"-C", "/tmp/a", "refs/heads/x", "0"}, 2, "", []string{"/tmp/a"}, nil, []string{"refs/heads/x", "0"}},
		{[]string{"-C/tmp/a", "-C", "b", "--directory=c", "--directory", "d=e", "-C=f", "x"}, 7, "", []string{"/tmp/a", "b", "c", "d=e", "=f"}, nil, []string{"x"}},
		{[]string{"--timeout", "5s", "--max-attempts=3", "--initial-delay", "1ms", "--max-delay=2s", "update-ref", "-d", "x"}, 6, "update-ref", nil,
			map[string]string{"--timeout": "5s", "--max-attempts": "3", "--initial-delay": "1ms", "--max-delay": "2s"}, []string{"-d", "x"}},
		{[]string{"--timeout=1s", "--timeout", "2s", "--log-format=json", "push", "origin"}, 4, "push", nil,
			map[string]string{"--timeout": "2s", "--log-format": "json"}, []string{"origin"}},
		{[]string{"--coalesce", "--break-stale-locks", "--timeout", "5m", "version"}, 4, "version", nil,
			map[string]string{"--coalesce": "true", "--break-stale-locks": "true", "--timeout": "5m"}, nil},
		{[]string{"--git", "version", "x"}, 2, "", nil, map[string]string{"--git": "version"}, []string{"x"}},
		{[]string{"--coalesce=1", "x"}, 0, "", nil, nil, []string{"--coalesce=1", "x"}},
		{[]string{"--frob", "version"}, 0, "", nil, nil, []string{"--frob", "version"}},
		{[]string{"--", "version"}, 0, "", nil, nil, []string{"--", "version"}},
		{[]string{"-m", "msg", "refs/heads/x", "HEAD"}, 0, "", nil, nil, []string{"-m", "msg", "refs/heads/x", "HEAD"}},
		{[]string{"--timeout", "1s", "--stdin", "-z"}, 2, "", nil, map[string]string{"--timeout": "1s"}, []string{"--stdin", "-z"}},
		{[]string{"update-ref", "--timeout", "1s", "-C", "x", "--help"}, 0, "update-ref", nil, nil, []string{"--timeout", "1s", "-C", "x", "--help"}},
		{[]string{"fetch", "--timeout", "1s", "origin"}, 0, "fetch", nil, nil, []string{"--timeout", "1s", "origin"}},
	}
	for _, tc := range cases {
		at, word, complete := split(tc.args)
		if at != tc.at || word != tc.word || !complete {
			t.Errorf("split(%q) = %d %q %v, want %d %q", tc.args, at, word, complete, tc.at, tc.word)
			continue
		}
		if at == 0 && (word == "" || word == "update-ref") {
			continue // the plain path: no kong
		}
		cli, err := parse(tc.args...)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		var rest []string
		switch word {
		case "", "update-ref":
			rest = cli.UpdateRef.Args
		case "push":
			rest = cli.Push.Args
		case "fetch":
			rest = cli.Fetch.Args
		}
		flags := map[string]string{}
		for _, s := range []*Setting[time.Duration]{&cli.Timeout, &cli.InitialDelay, &cli.MaxDelay} {
			if s.decoded {
				flags[s.spelling] = s.text
			}
		}
		for _, s := range []*Setting[string]{&cli.Git, &cli.LogFile} {
			if s.decoded {
				flags[s.spelling] = s.text
			}
		}
		for _, s := range []*Switch{&cli.Coalesce, &cli.BreakStaleLocks} {
			if s.decoded {
				flags[s.spelling] = s.text
			}
		}
		if cli.MaxAttempts.decoded {
			flags["--max-attempts"] = cli.MaxAttempts.text
		}
		if cli.LogFormat.decoded {
			flags["--log-format"] = cli.LogFormat.text
		}
		if !slices.Equal(cli.Dirs, tc.dirs) || !maps.Equal(flags, tc.flags) && len(flags)+len(tc.flags) > 0 || !slices.Equal(rest, tc.rest) {
			t.Errorf("%q: dirs %q, flags %q, rest %q", tc.args, cli.Dirs, flags, rest)
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

// TestGrammarIndex: grammar_index.go is what the grammar says of its commands and
// options; -update rewrites it.
func TestGrammarIndex(t *testing.T) {
	root := grammar(nil).Model.Node
	var commands []string
	for _, n := range root.Children {
		commands = append(commands, n.Name)
	}
	spell := func(flags []*kong.Flag) (switches, valued []string) {
		for _, f := range flags {
			if f.IsBool() {
				switches = append(switches, "--"+f.Name)
				continue
			}
			if f.Short != 0 {
				valued = append(valued, "-"+string(f.Short))
			}
			valued = append(valued, "--"+f.Name)
		}
		return switches, valued
	}
	switches, valued := spell(root.Flags)
	pushSwitches, pushValued := spell(commandNode(root, "push").Flags)
	list := func(s []string) string { return fmt.Sprintf("%#v", s) }
	src := fmt.Sprintf(`// Code generated by "go test ./internal/cli -run TestGrammarIndex -update" from CLI's kong grammar; DO NOT EDIT.

package cli

// grammarIndex is what split and gitArgs need of the grammar, without building kong:
// the command words, and the spellings of refretry's and push's own options, switches
// and those with a value.
var grammarIndex = struct{ commands, switches, valued, pushSwitches, pushValued []string }{
	commands: %s,
	switches: %s,
	valued: %s,
	pushSwitches: %s,
	pushValued: %s,
}
`, list(commands), list(switches), list(valued), list(append([]string{"--help"}, pushSwitches...)), list(pushValued))
	want, err := format.Source([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("grammar_index.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		if !*update {
			t.Fatalf("grammar_index.go is not the grammar's (go test ./internal/cli -run TestGrammarIndex -update rewrites it):\n%s", lineDiff(string(got), string(want)))
		}
		if err := os.WriteFile("grammar_index.go", want, 0o644); err != nil {
			t.Fatal(err)
		}
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

// TestSettings: every valued option and switch of the grammar is declared in a
// settings list (so that it is resolved and described), and only those.
func TestSettings(t *testing.T) {
	t.Parallel()
	var cli CLI
	declared := map[any]bool{}
	for _, s := range append(cli.Options.settings(), cli.Push.settings()...) {
		declared[s] = true
	}
	root := grammar(&cli).Model.Node
	for _, f := range append(root.Flags, commandNode(root, "push").Flags...) {
		s, isSetting := f.Target.Addr().Interface().(setting)
		if isSetting != declared[s] {
			t.Errorf("--%s: a Setting %v, declared %v", f.Name, isSetting, declared[s])
		}
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
	def := retry.DefaultPolicy()
	for _, want := range []string{
		"-C, --directory=PATH Run as if started in PATH (repeatable, as git -C).",
		"env REFRETRY_TIMEOUT, config refretry.timeout; default " + def.Timeout.String(),
		"env REFRETRY_MAX_ATTEMPTS, config refretry.maxAttempts; default " + strconv.Itoa(def.MaxAttempts),
		"env REFRETRY_STALE_AFTER, config refretry.staleAfter; default " + settings.DefaultStaleAfter.String(),
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
	resolve := func(o *Options, env []string, cfg map[string]string) error {
		for _, s := range o.settings() {
			if err := s.resolve(env); err != nil {
				return err
			}
		}
		for _, s := range o.settings() {
			if err := s.configure(cfg); err != nil {
				return err
			}
		}
		return nil
	}
	for _, tc := range cases {
		var env []string
		if tc.env != "" {
			env = []string{"REFRETRY_PID_GRACE=" + tc.env}
		}
		var o Options
		if tc.flag != "" {
			o.PIDGrace.set("--pid-grace", tc.flag)
		}
		if err := resolve(&o, env, tc.cfg); err != nil || o.PIDGrace.V != tc.want {
			t.Errorf("flag %q, env %q, config %v: %v (%v), want %v", tc.flag, tc.env, tc.cfg, o.PIDGrace.V, err, tc.want)
		}
	}
	var o Options
	o.PIDGrace.set("--pid-grace", "-1s")
	if err := resolve(&o, nil, nil); err == nil || err.Error() != `--pid-grace "-1s": not a non-negative duration such as 500ms, 30s or 2m` {
		t.Errorf("--pid-grace -1s: %v", err)
	}
	if err := resolve(&Options{}, []string{"REFRETRY_COALESCE=maybe"}, nil); err == nil || err.Error() != `REFRETRY_COALESCE="maybe": not a boolean such as 1, true, 0 or false` {
		t.Errorf("REFRETRY_COALESCE=maybe: %v", err)
	}
	if err := resolve(&Options{}, nil, map[string]string{"refretry.timeout": "x"}); err == nil || err.Error() != `bad value, git config refretry.timeout="x": not a non-negative duration such as 500ms, 30s or 2m` {
		t.Errorf("refretry.timeout=x: %v", err)
	}
	// The shim sets --git as a caller: it beats REFRETRY_GIT.
	o = Options{Dirs: []string{"d"}}
	o.Git.set("--git", "/shim/git")
	err := resolve(&o, []string{"REFRETRY_GIT=/env/git", "REFRETRY_MAX_ATTEMPTS=7"}, nil)
	if err != nil || o.Git.V != "/shim/git" || !o.Git.given || o.MaxAttempts.V != 7 || !slices.Equal(o.Dirs, []string{"d"}) {
		t.Errorf("shim: %+v %v", o, err)
	}
}
