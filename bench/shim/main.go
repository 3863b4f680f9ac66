// Command shim measures what the git shim adds to a call it hands straight to the
// real git: `git rev-parse HEAD` and `git status`, run through the shim (refretry
// linked as git) and through the real git directly, interleaved, and prints a markdown
// table of medians and 90th percentiles on standard output.
//
//	go run ./bench/shim -refretry /path/to/refretry -git /path/to/git [-runs 300]
//
// refretry should be built as CI builds it (CGO_ENABLED=0). The repository is made in
// a temporary directory with a few hundred files, so that status has work to do.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/harness/hermetic"
)

func main() {
	refretry := flag.String("refretry", "", "the refretry binary (required)")
	git := flag.String("git", "/usr/bin/git", "the real git")
	runs := flag.Int("runs", 300, "calls of each kind, at least 200 for the recorded numbers")
	floor := flag.Bool("floor", true, "also time a minimal Go program that only execs git (needs go on PATH): the part of the overhead any Go shim has")
	files := flag.Int("files", 500, "files in the repository")
	flag.Parse()
	if *refretry == "" {
		fmt.Fprintln(os.Stderr, "shim bench: -refretry is required")
		os.Exit(2)
	}
	if err := run(*refretry, *git, *runs, *files, *floor); err != nil {
		fmt.Fprintln(os.Stderr, "shim bench:", err)
		os.Exit(1)
	}
}

func run(refretry, git string, runs, files int, floor bool) error {
	refretry, err := filepath.Abs(refretry)
	if err != nil {
		return err
	}
	root, err := os.MkdirTemp("", "refretry-shim-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	shimDir := filepath.Join(root, "shim")
	if err := os.Mkdir(shimDir, 0o755); err != nil {
		return err
	}
	shimGit := filepath.Join(shimDir, "git")
	if err := os.Symlink(refretry, shimGit); err != nil {
		return err
	}
	floorGit := ""
	if floor {
		if floorGit, err = buildFloor(root, git); err != nil {
			return err
		}
	}
	repo := filepath.Join(root, "repo")
	env := append(hermetic.Env(os.Environ(), root),
		// The shim first, then the real git's directory: as after `refretry shim install`.
		"PATH="+shimDir+string(filepath.ListSeparator)+filepath.Dir(git)+string(filepath.ListSeparator)+os.Getenv("PATH"))
	sh := func(args ...string) error {
		cmd := exec.Command(git, args...)
		cmd.Dir, cmd.Env = repo, env
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Join(repo, "src"), 0o755); err != nil {
		return err
	}
	if err := sh("init", "-q"); err != nil {
		return err
	}
	for i := range files {
		p := filepath.Join(repo, "src", fmt.Sprintf("f%04d.txt", i))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			return err
		}
	}
	if err := sh("add", "."); err != nil {
		return err
	}
	if err := sh("commit", "-q", "-m", "bench"); err != nil {
		return err
	}
	out, err := exec.Command(git, "version").Output()
	if err != nil {
		return err
	}
	version := strings.TrimSpace(string(out))

	cases := [][]string{{"rev-parse", "HEAD"}, {"status"}}
	fmt.Printf("%d calls of each kind, interleaved (the order rotating every round); %s, repository of %d files; load average at the start %s.\n\n",
		runs, version, files, loadavg())
	header := "| command | real git median (ms) | shim median (ms) | added, median (ms) | real git p90 (ms) | shim p90 (ms) |"
	rule := "|---|--:|--:|--:|--:|--:|"
	if floorGit != "" {
		header += " minimal Go exec, added (ms) |"
		rule += "--:|"
	}
	fmt.Println(header)
	fmt.Println(rule)
	for _, args := range cases {
		paths := []string{git, shimGit}
		if floorGit != "" {
			paths = append(paths, floorGit)
		}
		times := make([][]time.Duration, len(paths))
		for i := range runs + 10 {
			for k := range paths {
				j := (i + k) % len(paths)
				d, err := timeOne(paths[j], args, repo, env)
				if err != nil {
					return err
				}
				if i >= 10 { // after a warm-up
					times[j] = append(times[j], d)
				}
			}
		}
		dm, sm := quantile(times[0], 0.5), quantile(times[1], 0.5)
		fmt.Printf("| `git %s` | %.2f | %.2f | %.2f | %.2f | %.2f |", strings.Join(args, " "),
			ms(dm), ms(sm), ms(sm-dm), ms(quantile(times[0], 0.9)), ms(quantile(times[1], 0.9)))
		if floorGit != "" {
			fmt.Printf(" %.2f |", ms(quantile(times[2], 0.5)-dm))
		}
		fmt.Println()
	}
	fmt.Printf("\nLoad average at the end: %s.\n", loadavg())
	return nil
}

// loadavg is the 1-minute load average from /proc/loadavg, "unknown" elsewhere.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(b))[0]
}

// floorSource is the least a shim written in Go can do: start, and exec git.
const floorSource = `package main

import (
	"os"
	"syscall"
)

func main() {
	git := os.Getenv("SHIM_BENCH_GIT")
	_ = syscall.Exec(git, append([]string{git}, os.Args[1:]...), os.Environ())
	os.Exit(127)
}
`

// buildFloor builds the minimal exec program as root/floor/git.
func buildFloor(root, git string) (string, error) {
	dir := filepath.Join(root, "floor")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(floorSource), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module floor\n\ngo 1.25\n"), 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command("go", "build", "-o", "git", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the minimal exec program: %v\n%s", err, out)
	}
	return filepath.Join(dir, "git"), os.Setenv("SHIM_BENCH_GIT", git)
}

// timeOne runs one call and returns its wall time.
func timeOne(path string, args []string, dir string, env []string) (time.Duration, error) {
	cmd := exec.Command(path, args...)
	cmd.Dir, cmd.Env = dir, env
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %v\n%s", path, strings.Join(args, " "), err, out)
	}
	return d, nil
}

func quantile(ds []time.Duration, q float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
