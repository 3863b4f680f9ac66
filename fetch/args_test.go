package fetch

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestRemoteOf: the repository a fetch names, the option values before it skipped as
// git skips them, checked against both real gits (by default each argument against
// one of them, in turn): given the argument, then "1", then a remote that does not
// exist, git names the remote it tried to fetch from.
func TestRemoteOf(t *testing.T) {
	t.Parallel()
	args := []string{
		"--depth", "--dep", "--deepen", "-j", "-qj", "--jobs", "-j4", "--refmap", "--shallow-since",
		"--shallow-exclude", "-o", "-qo", "--server-option", "--recurse-submodules",
		"--recurse-submodules-default", "--submodule-prefix", "--prune", "--prune-t", "-4", "--stdin",
		"--no-depth", "--depth=1", "-v", "--upload-pack",
	}
	type cell struct {
		r   *testutil.Repo
		arg string
	}
	gits := testutil.Gits(t)
	var all []cell
	var small []int
	for gi, g := range gits {
		r := testutil.NewRepo(t, g, "files")
		for i, arg := range args {
			if i%len(gits) == gi {
				small = append(small, len(all))
			}
			all = append(all, cell{r, arg})
		}
	}
	for _, c := range testutil.Cells(t, all, small...) {
		r, g, arg := c.r, c.r.Git, c.arg
		cmd := exec.Command(g.Path, "fetch", arg, "1", "nosuchremote")
		cmd.Dir, cmd.Env = r.Dir, r.Env
		out, _ := cmd.CombinedOutput()
		var used string
		switch {
		case strings.Contains(string(out), "'nosuchremote'"):
			used = "nosuchremote"
		case strings.Contains(string(out), "'1'"):
			used = "1"
		default:
			t.Fatalf("%s fetch %s 1 nosuchremote named neither remote:\n%s", g.Name(), arg, out)
		}
		if got := remoteOf([]string{arg, "1", "nosuchremote"}); got != used {
			t.Errorf("remoteOf(%s 1 nosuchremote) = %q; %s fetched from %q", arg, got, g.Name(), used)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--all"}, ""},
		{[]string{"--multiple", "a", "b"}, ""},
		{[]string{"--mul", "a", "b"}, ""},
		{[]string{"-qm", "a", "b"}, ""},
		{[]string{"--no-all", "origin"}, "origin"},
		{[]string{"--", "-odd"}, "-odd"},
		{nil, ""},
	} {
		if got := remoteOf(tc.args); got != tc.want {
			t.Errorf("remoteOf(%q) = %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestReadsStdin: --stdin, by its name or a prefix, the last of it and --no-stdin
// winning, and never an option's value or an operand after "--".
func TestReadsStdin(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"--stdin", "origin"}, true},
		{[]string{"origin", "--std"}, true},
		{[]string{"--stdin", "--no-stdin", "origin"}, false},
		{[]string{"-o", "--stdin", "origin"}, false},
		{[]string{"--refmap", "--stdin", "origin"}, false},
		{[]string{"origin", "--", "--stdin"}, false},
		{[]string{"origin"}, false},
	} {
		if got := readsStdin(tc.args); got != tc.want {
			t.Errorf("readsStdin(%q) = %v, want %v", tc.args, got, tc.want)
		}
	}
}
