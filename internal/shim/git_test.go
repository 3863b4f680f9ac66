//go:build unix

package shim

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestShimParseMatchesGit runs git 2.55 itself on command lines that mix every global
// option Parse knows (both spellings, values that look like commands or options) and
// checks, from git's trace, that the command git runs is the one Parse found. The
// command is update-ref with an option it rejects, so nothing is written.
func TestShimParseMatchesGit(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	r := testutil.NewRepo(t, g, "files")
	traced := regexp.MustCompile(`trace: (?:built-in|exec|run_command): git[ -]([^ \n]+)`)
	prefixes := [][]string{
		{},
		{"-C", "."}, {"-C", ""}, {"-c", "a.b=c"}, {"-c", "a.b=update-ref"}, {"-c", "a.b"},
		{"--git-dir", ".git"}, {"--git-dir=.git"}, {"--work-tree", "."}, {"--work-tree=."},
		{"--namespace", "update-ref"}, {"--namespace=ns"}, {"--config-env", "a.b=HOME"}, {"--config-env=a.b=HOME"},
		{"--attr-source", "HEAD"}, {"--attr-source=HEAD"}, {"--shallow-file", "update-ref"},
		{"--exec-path=" + r.Dir}, {"-C", ".git", "--bare"},
		{"-p"}, {"--paginate"}, {"-P"}, {"--no-pager"}, {"--no-lazy-fetch"}, {"--no-replace-objects"},
		{"--literal-pathspecs"}, {"--no-literal-pathspecs"}, {"--glob-pathspecs"}, {"--noglob-pathspecs"},
		{"--icase-pathspecs"}, {"--no-optional-locks"}, {"--no-advice"},
		{"-c", "x.y=z", "-C", ".", "--no-pager", "--git-dir", ".git"},
	}
	for _, prefix := range prefixes {
		for _, cmd := range [][]string{{"update-ref", "--no-such-option"}, {"rev-parse", "--git-dir"}} {
			args := append(append([]string{}, prefix...), cmd...)
			c, ok := Parse(args)
			if !ok {
				t.Errorf("Parse(%q) is unsure of options git accepts", args)
				continue
			}
			run := exec.Command(g.Path, args...)
			run.Dir = r.Dir
			run.Env = append(append([]string{}, r.Env...), "GIT_TRACE=1", "GIT_PAGER=cat", "PAGER=cat")
			out, _ := run.CombinedOutput()
			m := traced.FindSubmatch(out)
			if m == nil {
				t.Errorf("git %q: no command in its trace:\n%s", args, out)
				continue
			}
			if got := string(m[1]); got != c.Command {
				t.Errorf("git %q ran %s, Parse found %q", args, got, c.Command)
			}
			if c.Command == "update-ref" && !strings.Contains(string(out), "usage: git update-ref") {
				t.Errorf("git %q did not reach update-ref's option parsing:\n%s", args, out)
			}
		}
	}
}

// TestShimBuiltinsCoverGit asks both gits for their builtins: every one must be in the
// shim's list, or the shim would look for a git-<name> program for a command git runs
// itself (and, in a git that links its builtins into the exec path, run it there).
func TestShimBuiltinsCoverGit(t *testing.T) {
	t.Parallel()
	for _, g := range testutil.Gits(t) {
		out, err := exec.Command(g.Path, "--list-cmds=builtins").Output()
		if err != nil {
			t.Fatalf("%s --list-cmds=builtins: %v", g.Path, err)
		}
		names := strings.Fields(string(out))
		if len(names) < 100 {
			t.Fatalf("%s lists %d builtins:\n%s", g.Path, len(names), out)
		}
		for _, name := range names {
			if !builtin(name) {
				t.Errorf("%s (%s): builtin %s is not in builtins.go", g.Name(), g.Path, name)
			}
		}
	}
}
