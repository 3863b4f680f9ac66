package gitea

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/testutil"
)

// Version is the Gitea release scripts/gitea.sh builds.
const Version = "1.26.0"

// EnvBinary names the variable that gives the Gitea binary's path.
const EnvBinary = "REFRETRY_GITEA"

// ErrNoBinary is returned by Binary when REFRETRY_GITEA is not set and
// scripts/gitea.sh has not filled its cache.
var ErrNoBinary = errors.New("no Gitea binary: run scripts/gitea.sh build and set " + EnvBinary + " to the path it prints")

// Binary returns the path of the Gitea binary: REFRETRY_GITEA when set (it must then
// run), else the binary scripts/gitea.sh caches, when it is there; else ErrNoBinary.
func Binary() (string, error) {
	if path := os.Getenv(EnvBinary); path != "" {
		if err := check(path); err != nil {
			return "", fmt.Errorf("gitea: %s=%s: %w", EnvBinary, path, err)
		}
		return path, nil
	}
	path := cachedBinary()
	if path == "" {
		return "", ErrNoBinary
	}
	if _, err := os.Stat(path); err != nil {
		return "", ErrNoBinary
	}
	if err := check(path); err != nil {
		return "", fmt.Errorf("gitea: %s (from scripts/gitea.sh): %w", path, err)
	}
	return path, nil
}

// Need returns the Gitea binary, or skips the test with one line when there is none.
// A binary that is there but does not run fails the test: someone asked for it.
//
// The forge tests are the stress tier's (docs/testing.md): at the default size they
// run only when REFRETRY_GITEA names the binary, not merely because scripts/gitea.sh
// has cached one, so that `go test ./...` stays quick on a machine that ran the stress
// tier once.
func Need(t testing.TB) string {
	t.Helper()
	if os.Getenv(EnvBinary) == "" && !testutil.Stress(t) {
		t.Skip("gitea: the forge tests run at " + testutil.ScaleEnv + "=stress (scripts/test.sh --stress), or with " +
			EnvBinary + " set to the path scripts/gitea.sh build prints")
		return ""
	}
	path, err := Binary()
	if errors.Is(err, ErrNoBinary) {
		t.Skip("gitea: " + ErrNoBinary.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// cachedBinary is where scripts/gitea.sh puts the binary ("" without a home).
func cachedBinary() string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "refretry", "gitea-v"+Version, "gitea")
}

// check runs `gitea --version` and requires this package's Version.
func check(path string) error {
	out, err := exec.Command(path, "--version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s --version: %w: %s", path, err, strings.TrimSpace(string(out)))
	}
	if !strings.HasPrefix(strings.ToLower(string(out)), "gitea version "+Version+" ") {
		return fmt.Errorf("%s is not Gitea %s: %s", path, Version, strings.TrimSpace(string(out)))
	}
	return nil
}
