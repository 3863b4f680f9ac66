package releasetest

import (
	"archive/zip"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/harness/hermetic"
)

const module = "github.com/refretry/refretry"

// root is the repository's top directory.
var root = func() string {
	dir, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		panic(err)
	}
	return dir
}()

// goEnv is the environment for a go command that must use this machine's caches and
// never the network: a test's copy of the module, or the install script's build. It
// is Go's defaults otherwise: the user's go env file (GOENV) is not read, so that a
// GOFLAGS=-buildvcs=false or GOTOOLCHAIN set there changes no test's outcome.
func goEnv(t *testing.T) []string {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "GOFLAGS", k == "GOENV", k == "GOPROXY", k == "GONOSUMDB", k == "GOSUMDB", k == "GOPRIVATE", k == "GONOPROXY",
			k == "GOBIN", k == "CGO_ENABLED", k == "CI",
			strings.HasPrefix(k, "GITHUB_"), strings.HasPrefix(k, "GITLAB_"), strings.HasPrefix(k, "REFRETRY_"):
			continue
		}
		env = append(env, kv)
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	return append(env, "GOENV=off", "GOPROXY=off", "GOTOOLCHAIN=local", "TMPDIR="+t.TempDir())
}

// sourceTree copies the module's files (tracked, and new files not ignored, as they
// are in the work tree) into a new directory without .git, as a GitHub runner unpacks
// an action: a build there has no version control information to stamp.
func sourceTree(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "refretry")
	for _, name := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue // deleted in the work tree
		}
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, fi.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// sourceRepo is sourceTree in a new repository with one commit of fixed dates, so
// that builds from it have a known revision whatever the checkout is (a clone, a
// worktree, uncommitted changes). It returns the directory and the commit.
func sourceRepo(t *testing.T) (dir, rev string) {
	t.Helper()
	dir = sourceTree(t)
	env := hermetic.Env(os.Environ(), t.TempDir()) // fixed names and dates: 2023-11-14T22:13:20Z
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "snapshot for a test"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", args[0], err, out)
		}
	}
	cmd := exec.Command("git", "rev-parse", "HEAD")
	cmd.Dir, cmd.Env = dir, env
	b, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return dir, strings.TrimSpace(string(b))
}

// commitTime is the commit time hermetic.Env gives, as Go's build information and
// refretry version print it.
const commitTime = "2023-11-14T22:13:20Z"

// moduleProxy makes a directory that serves the module in src at version as a Go
// module proxy does (GOPROXY=file://…): what `go install module@version` downloads.
func moduleProxy(t *testing.T, src, version string) string {
	t.Helper()
	proxy := t.TempDir()
	at := filepath.Join(proxy, filepath.FromSlash(module), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var zipped bytes.Buffer
	zw := zip.NewWriter(&zipped)
	err = filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		w, err := zw.Create(module + "@" + version + "/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	})
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	info := `{"Version":"` + version + `","Time":"` + commitTime + `"}`
	for name, b := range map[string][]byte{
		"list": []byte(version + "\n"), version + ".info": []byte(info),
		version + ".mod": gomod, version + ".zip": zipped.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(at, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return proxy
}

// proxyEnv makes go install take the module from proxy and its dependencies from this
// machine's module cache, into a module cache of the test's own (so that the fake
// version never reaches the real one).
func proxyEnv(t *testing.T, env []string, proxy string) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(strings.TrimSpace(string(out)), "cache", "download")
	return append(env, "GOPROXY=file://"+filepath.ToSlash(proxy)+",file://"+filepath.ToSlash(cache),
		"GOSUMDB=off", "GOMODCACHE="+filepath.Join(t.TempDir(), "mod"), "GOFLAGS=-modcacherw")
}

// versionOf runs `refretry version` and returns its lines by their key ("version" for
// the first).
func versionOf(t *testing.T, bin string, env []string) map[string]string {
	t.Helper()
	cmd := exec.Command(bin, "version")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	fields := map[string]string{}
	for i, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if i == 0 {
			v, ok := strings.CutPrefix(line, "refretry version ")
			if !ok {
				t.Fatalf("first line %q", line)
			}
			fields["version"] = v
			continue
		}
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			t.Fatalf("line %q", line)
		}
		fields[k] = v
	}
	return fields
}

// linkGoCache makes path a symbolic link to this machine's Go build cache.
func linkGoCache(t *testing.T, path string) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.TrimSpace(string(out)), path); err != nil {
		t.Fatal(err)
	}
}
