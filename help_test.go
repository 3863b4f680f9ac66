package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/fakegit/fakegittest"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// TestHelpFollowsGit: -h is the running git's: refretry update-ref, push and fetch
// print what `git <command> -h` prints, on the same stream, and exit with its code.
// git 2.39 and 2.55 print the usage on stdout and exit 129; since git 2.56 (commit
// cdaf12f762, "parse-options: exit 0 on -h") they exit 0, which the fake git replays
// in front of git 2.55 (internal/harness/fakegit, REFRETRY_FAKEGIT_HELP_EXIT).
func TestHelpFollowsGit(t *testing.T) {
	t.Parallel()
	cur := testutil.NewGit(t)
	fake := fakegittest.Build(t, t.TempDir())
	type variant struct {
		name string
		git  testutil.Git
		fake bool
	}
	variants := []variant{{"git2.39", testutil.SystemGit(t), false}, {"git2.55", cur, false}, {"git2.56-parse-options", cur, true}}
	forms := [][]string{
		{"update-ref", "-h"},
		{"push", "-h"},
		{"push", "-v", "-h"},
		{"push", "origin", "main", "-h"}, // git push reads options after its arguments too
		{"push", "--help-all"},
		{"fetch", "-h"},
	}
	for _, v := range variants {
		for _, form := range forms {
			t.Run(v.name+"/"+strings.Join(form, "_"), func(t *testing.T) {
				t.Parallel()
				r := testutil.NewRepo(t, v.git, "files")
				env := []string{"REFRETRY_GIT=" + v.git.Path}
				if v.fake {
					env = []string{"REFRETRY_GIT=" + fake, "REFRETRY_FAKEGIT_REAL=" + v.git.Path,
						"REFRETRY_FAKEGIT_STATE=" + filepath.Join(t.TempDir(), "count"),
						"REFRETRY_FAKEGIT_COMMAND=" + form[0], "REFRETRY_FAKEGIT_HELP_EXIT=0"}
				}
				gitPath := v.git.Path
				if v.fake {
					gitPath = fake
				}
				want := runCmd(t, r.Dir, append(envFor(r), env...), "", gitPath, form...)
				got := runCmd(t, r.Dir, append(envFor(r), env...), "", binary, form...)
				if !strings.HasPrefix(want.stdout, "usage: git "+form[0]) {
					t.Fatalf("git %s: stdout %q, want its usage", strings.Join(form, " "), want.stdout)
				}
				if v.fake && want.code != 0 {
					t.Errorf("the fake git %s exited %d, not 0 as git 2.56 does", strings.Join(form, " "), want.code)
				}
				if got != want {
					t.Errorf("refretry %s differs from git:\n got: %s\nwant: %s", strings.Join(form, " "), fmt.Sprint(got), fmt.Sprint(want))
				}
			})
		}
	}
}
