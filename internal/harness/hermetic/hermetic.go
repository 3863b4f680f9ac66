// Package hermetic builds the fixed environment that refretry's tests, soak and
// benchmarks run git in: nothing from the user's or the system's git configuration,
// no CI's variables, one identity and date (so object ids repeat from run to run) and
// the C locale.
package hermetic

import (
	"path/filepath"
	"strings"
)

// dropped are the variables of the caller's environment that Env leaves out, by
// prefix: git's and refretry's own, a CI's (they would switch refretry's logs to that
// CI's format), and those Env sets itself.
var dropped = []string{"GIT_", "REFRETRY_", "GITHUB_", "GITLAB_", "CI=", "HOME=", "XDG_CONFIG_HOME=", "LC_ALL=", "LANGUAGE="}

// Env is base (the caller's environment) without the variables that could change what
// git or refretry do, with HOME at home and a fixed identity and date added.
func Env(base []string, home string) []string {
	env := make([]string, 0, len(base)+12)
next:
	for _, kv := range base {
		for _, p := range dropped {
			if strings.HasPrefix(kv, p) {
				continue next
			}
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=A U Thor", "GIT_AUTHOR_EMAIL=author@example.com",
		"GIT_AUTHOR_DATE=1700000000 +0000", "GIT_COMMITTER_NAME=C O Mitter",
		"GIT_COMMITTER_EMAIL=committer@example.com", "GIT_COMMITTER_DATE=1700000000 +0000",
		"LC_ALL=C")
}
