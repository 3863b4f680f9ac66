package gitexec

import (
	"slices"
	"testing"
)

func TestGetenv(t *testing.T) {
	env := []string{"A=1", "AB=2", "A=3", "EMPTY=", "NOEQUALS"}
	for key, want := range map[string]string{"A": "3", "AB": "2", "EMPTY": "", "NOEQUALS": "", "B": ""} {
		if got := Getenv(env, key); got != want {
			t.Errorf("Getenv(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestSetenv(t *testing.T) {
	env := []string{"A=1", "AB=2", "A=3"}
	got := Setenv(env, "A", "x")
	if want := []string{"AB=2", "A=x"}; !slices.Equal(got, want) {
		t.Errorf("Set = %q, want %q", got, want)
	}
	if want := []string{"A=1", "AB=2", "A=3"}; !slices.Equal(env, want) {
		t.Errorf("Set changed its input: %q", env)
	}
}

// TestPath: a Runner's empty Git is git on PATH; a configured one is kept as given.
func TestPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": "git", "/opt/git/bin/git": "/opt/git/bin/git", "git2": "git2"} {
		if got := Path(in); got != want {
			t.Errorf("Path(%q) = %q, want %q", in, got, want)
		}
	}
}
