package releasetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// install runs scripts/action-install.sh with the given settings added to env, and
// returns the binary it printed (empty if it failed), its stderr, and its error.
func install(t *testing.T, env []string, settings ...string) (bin, stderr string, err error) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "action-install.sh"))
	cmd.Dir = t.TempDir()
	cmd.Env = append(append(env, "GITHUB_ACTIONS=true"), settings...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if err == nil {
		bin = lines[len(lines)-1]
	}
	return bin, errOut.String(), err
}

// checkInstalled checks that bin is the release's binary for this machine, byte for
// byte, and that it runs.
func checkInstalled(t *testing.T, rel *Release, bin string) {
	t.Helper()
	got, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if want := rel.Binary(t, runtime.GOOS, runtime.GOARCH); !bytes.Equal(got, want) {
		t.Fatalf("%s is not the binary of %s", bin, rel.HostArchive())
	}
	if v := versionOf(t, bin, nil); v["version"] != rel.Tag {
		t.Errorf("installed refretry says version %q, want %q", v["version"], rel.Tag)
	}
}

// TestInstallRelease: the archive for this machine is downloaded, checked and
// unpacked; the second run (the server and the system's caches warm) is timed too.
func TestInstallRelease(t *testing.T) {
	rel := Need(t)
	url, hits := rel.Serve(t, nil)
	env := goEnv(t)
	var took [2]time.Duration
	for i := range took {
		dir := filepath.Join(t.TempDir(), "bin")
		start := time.Now()
		bin, stderr, err := install(t, env, "REFRETRY_VERSION="+rel.Tag, "REFRETRY_RELEASES_URL="+url, "REFRETRY_INSTALL_DIR="+dir)
		took[i] = time.Since(start)
		if err != nil {
			t.Fatalf("install: %v\n%s", err, stderr)
		}
		if bin != filepath.Join(dir, "refretry") || !strings.Contains(stderr, "installed "+rel.HostArchive()) {
			t.Errorf("installed %q:\n%s", bin, stderr)
		}
		checkInstalled(t, rel, bin)
	}
	if n := hits(rel.HostArchive()); n != 2 {
		t.Errorf("the archive was fetched %d times, want 2", n)
	}
	t.Logf("timing: install from the local server (download, SHA-256 check, unpack): first %v, warm %v",
		took[0].Round(time.Millisecond), took[1].Round(time.Millisecond))
}

// TestInstallFailsClosed: whatever does not check out stops the install with an
// error annotation, and leaves no binary behind.
func TestInstallFailsClosed(t *testing.T) {
	rel := Need(t)
	archive := rel.HostArchive()
	tests := []struct {
		name string
		edit func(files map[string][]byte)
		want string
	}{{
		name: "corrupted archive",
		edit: func(files map[string][]byte) { Corrupt(files, archive) },
		want: "SHA-256 of " + archive + " is ",
	}, {
		name: "archive replaced, checksums.txt too old",
		edit: func(files map[string][]byte) { files[archive] = files[rel.Archive("linux", "arm64")] },
		want: "but checksums.txt says",
	}, {
		name: "no line for the archive",
		edit: func(files map[string][]byte) { DropChecksum(files, archive) },
		want: "checksums.txt of release " + rel.Tag + " has no line for " + archive,
	}, {
		name: "no checksums.txt",
		edit: func(files map[string][]byte) { delete(files, "checksums.txt") },
		want: "but no checksums.txt",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url, _ := rel.Serve(t, tt.edit)
			dir := filepath.Join(t.TempDir(), "bin")
			bin, stderr, err := install(t, goEnv(t), "REFRETRY_VERSION="+rel.Tag, "REFRETRY_RELEASES_URL="+url, "REFRETRY_INSTALL_DIR="+dir)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || bin != "" {
				t.Fatalf("install: %v, printed %q\n%s", err, bin, stderr)
			}
			if !strings.Contains(stderr, "::error title=refretry install::") || !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr does not say %q in an error annotation:\n%s", tt.want, stderr)
			}
			if _, err := os.Stat(filepath.Join(dir, "refretry")); !os.IsNotExist(err) {
				t.Errorf("a binary was left in %s (%v)", dir, err)
			}
		})
	}
}

// TestInstallChoosesTheRelease covers how the version is chosen and what happens
// where there is no archive to use.
func TestInstallChoosesTheRelease(t *testing.T) {
	rel := Need(t)
	url, _ := rel.Serve(t, nil)
	// The runner unpacks an action, without .git, at <work>/_actions/<owner>/<repo>/<ref>.
	actionAt := func(t *testing.T, ref string) string {
		dir := filepath.Join(t.TempDir(), "_actions", "refretry", "refretry")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(sourceTree(t), filepath.Join(dir, ref)); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(dir, ref)
	}

	t.Run("the Action's own tag", func(t *testing.T) {
		t.Parallel()
		path := actionAt(t, rel.Tag)
		bin, stderr, err := install(t, goEnv(t), "REFRETRY_RELEASES_URL="+url, "GITHUB_ACTION_PATH="+path,
			"REFRETRY_SOURCE_DIR="+path, "REFRETRY_INSTALL_DIR="+t.TempDir())
		if err != nil {
			t.Fatalf("install: %v\n%s", err, stderr)
		}
		checkInstalled(t, rel, bin)
	})

	t.Run("latest", func(t *testing.T) {
		t.Parallel()
		bin, stderr, err := install(t, goEnv(t), "REFRETRY_VERSION=latest", "REFRETRY_RELEASES_URL="+url, "REFRETRY_INSTALL_DIR="+t.TempDir())
		if err != nil {
			t.Fatalf("install: %v\n%s", err, stderr)
		}
		checkInstalled(t, rel, bin)
	})

	t.Run("not a release tag: source", func(t *testing.T) {
		t.Parallel()
		path := actionAt(t, "main")
		bin, stderr, err := install(t, goEnv(t), "REFRETRY_RELEASES_URL="+url, "GITHUB_ACTION_PATH="+path,
			"REFRETRY_SOURCE_DIR="+path, "REFRETRY_INSTALL_DIR="+t.TempDir())
		if err != nil || !strings.Contains(stderr, "ref (main) is not a release tag") || !strings.Contains(stderr, "from source") {
			t.Fatalf("install: %v\n%s", err, stderr)
		}
		if v := versionOf(t, bin, nil); v["version"] != "(devel)" {
			t.Errorf("a build of a branch says version %q", v["version"])
		}
	})

	t.Run("no archive for this platform: source", func(t *testing.T) {
		t.Parallel()
		url, hits := rel.Serve(t, func(files map[string][]byte) { delete(files, rel.HostArchive()) })
		path := actionAt(t, rel.Tag)
		bin, stderr, err := install(t, goEnv(t), "REFRETRY_RELEASES_URL="+url, "GITHUB_ACTION_PATH="+path,
			"REFRETRY_SOURCE_DIR="+path, "REFRETRY_INSTALL_DIR="+t.TempDir())
		if err != nil || !strings.Contains(stderr, "(404): building from source") {
			t.Fatalf("install: %v\n%s", err, stderr)
		}
		if hits(rel.HostArchive()) != 1 || hits("checksums.txt") != 0 {
			t.Errorf("requests: archive %d, checksums.txt %d", hits(rel.HostArchive()), hits("checksums.txt"))
		}
		// The Action's tag is stamped into its source build.
		if v := versionOf(t, bin, nil); v["version"] != rel.Tag {
			t.Errorf("the source build says version %q, want %q", v["version"], rel.Tag)
		}
	})

	t.Run("a version that is none", func(t *testing.T) {
		t.Parallel()
		_, stderr, err := install(t, goEnv(t), "REFRETRY_VERSION=1.2", "REFRETRY_INSTALL_DIR="+t.TempDir())
		if err == nil || !strings.Contains(stderr, "version must be vX.Y.Z, latest or source, not '1.2'") {
			t.Errorf("install: %v\n%s", err, stderr)
		}
	})
}

// TestReleaseArchives checks every archive against checksums.txt and looks at the
// binaries: one per platform, static and stripped where that can be seen here.
func TestReleaseArchives(t *testing.T) {
	rel := Need(t)
	sums := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(rel.Files["checksums.txt"])), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			t.Fatalf("checksums.txt line %q", line)
		}
		sums[name] = sum
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		for _, goarch := range []string{"amd64", "arm64"} {
			name := rel.Archive(goos, goarch)
			b, ok := rel.Files[name]
			if !ok {
				t.Errorf("no %s", name)
				continue
			}
			sum := sha256.Sum256(b)
			if got := hex.EncodeToString(sum[:]); sums[name] != got {
				t.Errorf("%s: SHA-256 %s, checksums.txt says %q", name, got, sums[name])
			}
			delete(sums, name)
		}
	}
	if len(sums) != 0 {
		t.Errorf("checksums.txt lists more than the six archives: %v", sums)
	}
	checkStaticStripped(t, rel.Binary(t, "linux", "amd64"))
	checkStaticStripped(t, rel.Binary(t, "linux", "arm64"))
	bin := filepath.Join(t.TempDir(), "refretry")
	if err := os.WriteFile(bin, rel.Binary(t, runtime.GOOS, runtime.GOARCH), 0o755); err != nil {
		t.Fatal(err)
	}
	v := versionOf(t, bin, nil)
	if v["version"] != rel.Tag || v["date"] == "unknown" || (rel.Commit != "" && strings.Fields(v["commit"])[0] != rel.Commit) {
		t.Errorf("refretry version of the release: %v, want %s from %s", v, rel.Tag, rel.Commit)
	}
}
