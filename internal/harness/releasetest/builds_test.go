package releasetest

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersionOfEachBuild builds refretry the three ways people get it and checks
// what `refretry version` says: a release build with the values stamped by the
// linker, a plain go build in a checkout (version and vcs.* from the build
// information), and go install of a module version (served by a module proxy
// directory, as the real proxy serves a tag).
func TestVersionOfEachBuild(t *testing.T) {
	Need(t) // builds refretry three times: run by scripts/release-check.sh only
	t.Parallel()
	src, rev := sourceRepo(t)
	env := goEnv(t)
	build := func(t *testing.T, env []string, args ...string) string {
		t.Helper()
		bin := filepath.Join(t.TempDir(), "refretry")
		cmd := exec.Command("go", append(append([]string{"build", "-o", bin}, args...), ".")...)
		cmd.Dir, cmd.Env = src, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		return bin
	}

	t.Run("release build, stamped", func(t *testing.T) {
		t.Parallel()
		pkg := module + "/internal/buildinfo"
		bin := build(t, append(env, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=false"), "-trimpath", "-ldflags",
			"-s -w -X "+pkg+".version=v9.8.7 -X "+pkg+".commit="+rev+" -X "+pkg+".date=2026-02-03T04:05:06Z")
		got := versionOf(t, bin, env)
		if got["version"] != "v9.8.7" || got["commit"] != rev || got["date"] != "2026-02-03T04:05:06Z" {
			t.Errorf("refretry version: %v", got)
		}
		// The git it would run: the one on PATH, REFRETRY_GIT's, or none.
		if git, err := exec.LookPath("git"); err != nil || !strings.HasPrefix(got["git"], git+" (git version ") {
			t.Errorf("git: %q, want %s (git version …) (%v)", got["git"], git, err)
		}
		if got := versionOf(t, bin, append(env, "REFRETRY_GIT=/nonexistent/git")); !strings.HasPrefix(got["git"], "/nonexistent/git: not found") {
			t.Errorf("with REFRETRY_GIT=/nonexistent/git, git: %q", got["git"])
		}
		if got := versionOf(t, bin, append(env, "PATH="+t.TempDir())); got["git"] != "git: not found" {
			t.Errorf("with no git on PATH, git: %q", got["git"])
		}
	})

	t.Run("go build in a checkout", func(t *testing.T) {
		t.Parallel()
		// -buildvcs=true, not auto: a machine's go env may switch it off (this one's does).
		bin := build(t, append(env, "CGO_ENABLED=0", "GOFLAGS=-buildvcs=true"))
		got := versionOf(t, bin, env)
		// Go 1.24 and later derive a pseudo-version from the commit; earlier ones say (devel).
		pseudo := "v0.0.0-" + strings.NewReplacer("-", "", "T", "", ":", "", "Z", "").Replace(commitTime) + "-" + rev[:12]
		if got["version"] != "(devel)" && got["version"] != pseudo {
			t.Errorf("version %q, want (devel) or %s", got["version"], pseudo)
		}
		if got["commit"] != rev || got["date"] != commitTime {
			t.Errorf("commit %q date %q, want %s %s (from vcs.revision and vcs.time)", got["commit"], got["date"], rev, commitTime)
		}
	})

	t.Run("go install of a module version", func(t *testing.T) {
		t.Parallel()
		const version = "v1.2.3"
		gobin := t.TempDir()
		cmd := exec.Command("go", "install", module+"@"+version)
		cmd.Dir = t.TempDir() // outside any module, as a user runs it
		cmd.Env = append(proxyEnv(t, env, moduleProxy(t, src, version)), "GOBIN="+gobin, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go install: %v\n%s", err, out)
		}
		got := versionOf(t, filepath.Join(gobin, "refretry"), env)
		// A module zip holds no repository: no revision, no time.
		if got["version"] != version || got["commit"] != "unknown" || got["date"] != "unknown" {
			t.Errorf("refretry version: %v", got)
		}
	})
}
