package apicommit

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/replay"
)

// TestForRemote: the endpoint comes from the remote's URL as the repository's git reads
// it, then the caller's Want, then the environment; what cannot be found is a
// *ConfigError whose one line says what to set, and never holds the URL's password.
func TestForRemote(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	r := testutil.NewRepo(t, g, "files")
	// The test's own environment, without a CI's or a forge's variables that the
	// cases below set themselves.
	base := slices.DeleteFunc(slices.Clone(r.Env), func(kv string) bool {
		return strings.HasPrefix(kv, "GITEA_") || strings.HasPrefix(kv, "CI_")
	})
	for _, tt := range []struct {
		name, url string
		want      Want
		env       []string
		api, repo string // the endpoint found
		err       string // else the error, whole
	}{
		{name: "github.com", url: "https://x-access-token:secret@github.com/o/n.git", env: []string{"GITHUB_TOKEN=t"},
			api: "https://api.github.com", repo: "o/n"},
		{name: "GitHub's Actions", url: "https://ghe.example/o/n", env: []string{"GITHUB_ACTIONS=true", "GITHUB_API_URL=https://ghe.example/api/v3/", "GITHUB_TOKEN=t"},
			api: "https://ghe.example/api/v3", repo: "o/n"},
		{name: "given", url: "https://code.example/group/sub/n.git", want: Want{Forge: "gitlab", Token: "t"},
			api: "https://code.example/api/v4", repo: "group%2Fsub%2Fn"}, // GitLab names a project by its encoded path
		// An ssh remote names the forge's web host: its API is there, not on the ssh port.
		{name: "scp-like", url: "git@github.com:o/n.git", env: []string{"GITHUB_TOKEN=t"},
			api: "https://api.github.com", repo: "o/n"},
		{name: "ssh", url: "ssh://git@gitea.example:2222/o/n.git", env: []string{"GITEA_TOKEN=t"},
			api: "https://gitea.example/api/v1", repo: "o/n"},
		{name: "ssh, GitLab subgroup", url: "git@gitlab.example:group/sub/n.git", env: []string{"REFRETRY_API_TOKEN=t"},
			api: "https://gitlab.example/api/v4", repo: "group%2Fsub%2Fn"},
		{name: "path", url: "/srv/git/o/n.git", env: []string{"GITHUB_TOKEN=t"},
			err: "the remote /srv/git/o/n.git is not an http(s) or ssh URL: push --api finds the forge's API from it"},
		{name: "drive letter", url: `C:\repos\n.git`, env: []string{"GITHUB_TOKEN=t"},
			err: `the remote C:\repos\n.git is not an http(s) or ssh URL: push --api finds the forge's API from it`},
		{name: "ssh, no repository", url: "git@github.com:n.git", env: []string{"GITHUB_TOKEN=t"},
			err: "the remote git@github.com:n.git names no repository (owner/name)"},
		{name: "git protocol", url: "git://github.com/o/n.git", env: []string{"GITHUB_TOKEN=t"},
			err: "the remote git://github.com/o/n.git is not an http(s) or ssh URL: push --api finds the forge's API from it"},
		{name: "not a URL", url: "https://user:pass word@github.com/o/n", env: []string{"GITHUB_TOKEN=t"},
			err: "the remote (a URL that does not parse) is not an http(s) or ssh URL: push --api finds the forge's API from it"},
		{name: "unknown host", url: "https://code.example/o/n", env: []string{"REFRETRY_API_TOKEN=t"},
			err: "cannot tell which forge code.example is: give --forge github, gitea or gitlab"},
		{name: "unknown forge", url: "https://code.example/o/n", want: Want{Forge: "bitbucket", Token: "t"},
			err: "--forge bitbucket: not github, gitea or gitlab"},
		{name: "no repository", url: "https://user:secret@gitea.example/o", env: []string{"GITEA_TOKEN=t"},
			err: "the remote https://gitea.example/o names no repository (owner/name)"},
		{name: "no token", url: "https://gitea.example/o/n", want: Want{Forge: "gitea"},
			err: "no token for gitea's API: set REFRETRY_API_TOKEN (or the CI's own, GITEA_TOKEN, GITHUB_TOKEN)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r.Run("config", "remote.origin.url", tt.url)
			repo := replay.Repo{Git: g.Path, Dirs: []string{r.Dir}}
			ep, raw, err := ForRemote(context.Background(), repo, append(slices.Clip(base), tt.env...), "origin", tt.want)
			if tt.err != "" {
				var ce *ConfigError
				if !errors.As(err, &ce) || err.Error() != tt.err {
					t.Fatalf("error %v (%T), want the *ConfigError %q", err, err, tt.err)
				}
				return
			}
			if err != nil || raw != tt.url || ep.API != tt.api || ep.Repo != tt.repo || ep.Token != "t" {
				t.Fatalf("ForRemote = API %q, repository %q, token %q, URL %q, %v; want %q, %q, t, %q",
					ep.API, ep.Repo, ep.Token, raw, err, tt.api, tt.repo, tt.url)
			}
		})
	}
}
