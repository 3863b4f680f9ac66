package cli

import (
	"slices"
	"testing"
	"time"

	"github.com/refretry/refretry/gather"
)

// pushOf is push's command as kong reads `refretry push args...`, its own options
// resolved.
func pushOf(args ...string) (PushCmd, error) {
	cli, err := parse(append([]string{"push"}, args...)...)
	if err != nil {
		return PushCmd{}, err
	}
	for _, s := range cli.Push.settings() {
		if err := s.resolve(nil); err != nil {
			return PushCmd{}, err
		}
	}
	return cli.Push, nil
}

func TestPushTakeOptions(t *testing.T) {
	t.Parallel()
	at, word, _ := split([]string{"--timeout", "5s", "push", "--rebase", "origin", "main"})
	if at != 2 || word != "push" {
		t.Errorf("split = %d %q", at, word)
	}
	tests := []struct {
		args             []string
		noAtomic, rebase bool
		rest             []string
	}{
		{[]string{"--rebase", "origin", "main"}, false, true, []string{"origin", "main"}},
		{[]string{"origin", "--no-atomic", "main"}, true, false, []string{"origin", "main"}},
		{[]string{"-o", "--rebase", "origin"}, false, false, []string{"-o", "--rebase", "origin"}},
		{[]string{"-fo", "--rebase", "origin"}, false, false, []string{"-fo", "--rebase", "origin"}},
		{[]string{"-ofoo", "--rebase", "origin"}, false, true, []string{"-ofoo", "origin"}},
		{[]string{"origin", "--", "--rebase"}, false, false, []string{"origin", "--", "--rebase"}},
		{[]string{"--force-with-lease", "origin", "main"}, false, false, []string{"--force-with-lease", "origin", "main"}},
		{[]string{"--no-atomic", "--rebase", "--repo", "--no-atomic"}, true, true, []string{"--repo", "--no-atomic"}},
		{[]string{"--timeout", "5s", "-C", "x", "origin"}, false, false, []string{"--timeout", "5s", "-C", "x", "origin"}},
		{[]string{"--rebase=yes", "origin"}, false, false, []string{"--rebase=yes", "origin"}},
		{[]string{"--", "x"}, false, false, []string{"--", "x"}},
		{nil, false, false, nil},
	}
	for _, tc := range tests {
		c, err := pushOf(tc.args...)
		if err != nil || c.NoAtomic != tc.noAtomic || c.Rebase != tc.rebase || !slices.Equal(c.Args, tc.rest) {
			t.Errorf("push %q = %v %v %q %v", tc.args, c.NoAtomic, c.Rebase, c.Args, err)
		}
	}
	for _, tc := range []struct {
		args       []string
		regenerate string
		rest       []string
	}{
		{[]string{"--regenerate", "make results", "origin", "HEAD:main"}, "make results", []string{"origin", "HEAD:main"}},
		{[]string{"origin", "--regenerate=./gen.sh --all", "main"}, "./gen.sh --all", []string{"origin", "main"}},
		{[]string{"--rebase", "--regenerate", "--rebase", "origin"}, "--rebase", []string{"origin"}},
		{[]string{"origin", "--", "--regenerate", "x"}, "", []string{"origin", "--", "--regenerate", "x"}},
	} {
		c, err := pushOf(tc.args...)
		if err != nil || c.Regenerate.V != tc.regenerate || !slices.Equal(c.Args, tc.rest) {
			t.Errorf("push %q = %q %q %v", tc.args, c.Regenerate.V, c.Args, err)
		}
	}
}

// TestPushGatherOptions: --gather's options, each in both spellings, and the
// libraries' defaults for those not given.
func TestPushGatherOptions(t *testing.T) {
	t.Parallel()
	c, err := pushOf("--gather", "--gather-max=8", "--gather-lease", "1s", "-o", "--gather-max=9",
		"--gather-key-file", "k", "origin", "--gather-max-age=2h", "HEAD:main")
	if err != nil || !c.Gather || c.GatherMax.V != 8 || c.GatherLease.V != time.Second || c.GatherKeyFile.V != "k" ||
		c.GatherMaxAge.V != 2*time.Hour || !slices.Equal(c.Args, []string{"-o", "--gather-max=9", "origin", "HEAD:main"}) {
		t.Errorf("push --gather … = %+v %v", c, err)
	}
	d, err := pushOf("--gather", "origin", "main")
	if err != nil || d.GatherMax.V != gather.DefaultMaxPerWave || d.GatherLease.V != gather.DefaultLeaseTimeout || d.GatherMaxAge.V != gather.DefaultMaxAge {
		t.Errorf("defaults: %+v %v", d.PushOptions, err)
	}
}

// TestPushBadOptions: a push option without its value, or with one that is not a
// positive number or duration, and arguments push --gather cannot take, are a usage
// error: exit 129 and one line, before git runs.
func TestPushBadOptions(t *testing.T) {
	t.Parallel()
	nowhere := t.TempDir() // a push that let the value pass would run git: not in a repository
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"origin", "main", "--regenerate"}, "refretry: push: --regenerate needs a value\n"},
		{[]string{"--gather", "origin", "main", "--gather-lease"}, "refretry: push: --gather-lease needs a value\n"},
		{[]string{"--gather", "--gather-max=0", "origin", "main"}, "refretry: push: --gather-max needs a positive number, not \"0\"\n"},
		{[]string{"--gather", "--gather-max", "many", "origin", "main"}, "refretry: push: --gather-max needs a positive number, not \"many\"\n"},
		{[]string{"--gather", "--gather-lease", "soon", "origin", "main"}, "refretry: push: --gather-lease needs a positive duration (30s, 2m), not \"soon\"\n"},
		{[]string{"--gather", "--gather-lease=-1s", "origin", "main"}, "refretry: push: --gather-lease needs a positive duration (30s, 2m), not \"-1s\"\n"},
		{[]string{"--gather", "--gather-max-age=0", "origin", "main"}, "refretry: push: --gather-max-age needs a positive duration (30s, 2m), not \"0\"\n"},
		// The gather's own reading of git's arguments: its usage line alone, no note of
		// the missing gather key before it.
		{[]string{"--gather", "origin"}, "refretry: push --gather: takes <remote> [<src>:]<branch>, one branch\n"},
		{[]string{"--gather", "-o", "x", "origin", "HEAD:refs/tags/v1"}, "refretry: push --gather: HEAD:refs/tags/v1 is not [<src>:]<branch>\n"},
	} {
		stdout, stderr, code := run(t, nil, append([]string{"-C", nowhere, "push"}, tc.args...)...)
		if code != exitUsage || stdout != "" || stderr != tc.want {
			t.Errorf("push %q: exit %d, stdout %q, stderr %q; want 129 and %q", tc.args, code, stdout, stderr, tc.want)
		}
	}
}
