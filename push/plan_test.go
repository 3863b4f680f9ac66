package push

import (
	"context"
	"fmt"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/settings"
)

func TestPlanFromArgs(t *testing.T) {
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "files")
	r.Run("tag", "v1")
	r.Run("branch", "side")
	p := &Runner{Config: settings.Config{Git: r.Git.Path, Dirs: []string{r.Dir}, Env: r.Env}}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"origin", "main", "v1"}, "[refs/heads/main>refs/heads/main refs/tags/v1>refs/tags/v1]"},
		{[]string{"--force-with-lease=main:abc", "-o", "x", "origin", "+HEAD:ci"}, "[refs/heads/main>refs/heads/ci]"},
		{[]string{"-fo", "x", "origin", "HEAD:ci"}, "[refs/heads/main>refs/heads/ci]"}, // x is -o's value
		{[]string{"-ofd", "origin", "HEAD:ci"}, "[refs/heads/main>refs/heads/ci]"},     // -o with "fd", not -d
		{[]string{"-fd", "origin", "main"}, "[]"},                                      // a deletion
		{[]string{"--del", "origin", "main"}, "[]"},
		{[]string{"--no-tags", "origin", "main"}, "[refs/heads/main>refs/heads/main]"},
		{[]string{"--recurse-submodules", "check", "origin", "HEAD:ci"}, "[refs/heads/main>refs/heads/ci]"}, // check is the option's value
		{[]string{"-qo", "origin", "up", "main:side"}, "[refs/heads/main>refs/heads/side]"},                 // origin is -o's value
		{[]string{"origin", "side:refs/ci/1", ":refs/heads/gone"}, "[refs/heads/side>refs/ci/1 >refs/heads/gone]"},
		{[]string{"origin", r.Commit + ":refs/ci/2"}, fmt.Sprintf("[%s>refs/ci/2]", r.Commit)},
		{[]string{"origin", "v1:v2"}, "[refs/tags/v1>refs/tags/v2]"},
		{[]string{"origin"}, "[]"},
		{[]string{"--all", "origin"}, "[]"},
		{[]string{"--follow-tags", "origin", "main"}, "[]"},
		{[]string{"origin", "refs/heads/*:refs/heads/*"}, "[]"},
		{[]string{"origin", "main", "^refs/heads/side"}, "[]"},
		{[]string{"origin", ":gone"}, "[]"},
		{[]string{"origin", "nosuch"}, "[]"},
		{[]string{"origin", r.Commit + ":short"}, "[]"},
	}
	for _, tc := range tests {
		var got []string
		for _, s := range p.planFromArgs(context.Background(), ParseArgs(tc.args)) {
			got = append(got, s.From+">"+s.To)
		}
		if s := fmt.Sprint(got); s != tc.want {
			t.Errorf("planFromArgs(%q) = %s, want %s", tc.args, s, tc.want)
		}
	}
}
