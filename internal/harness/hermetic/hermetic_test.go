package hermetic

import (
	"slices"
	"testing"
)

func TestEnv(t *testing.T) {
	base := []string{"PATH=/bin", "GIT_DIR=/x", "REFRETRY_TIMEOUT=1s", "GITHUB_ACTIONS=true", "CI=true",
		"HOME=/root", "XDG_CONFIG_HOME=/root/.config", "LC_ALL=de_DE.UTF-8", "CIRCLE=1"}
	env := Env(base, "/tmp/h")
	for _, want := range []string{"PATH=/bin", "CIRCLE=1", "HOME=/tmp/h", "XDG_CONFIG_HOME=/tmp/h/.config", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C"} {
		if !slices.Contains(env, want) {
			t.Errorf("Env lacks %q: %q", want, env)
		}
	}
	for _, gone := range []string{"GIT_DIR=/x", "REFRETRY_TIMEOUT=1s", "GITHUB_ACTIONS=true", "CI=true", "HOME=/root", "LC_ALL=de_DE.UTF-8"} {
		if slices.Contains(env, gone) {
			t.Errorf("Env kept %q", gone)
		}
	}
}
