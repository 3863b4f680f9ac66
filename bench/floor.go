package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// floorSource is the least any Go wrapper around git can do: start, run git with the
// caller's arguments and streams, wait, and exit with git's code. Measuring it next to
// refretry separates the cost of being a Go process that starts git (which no design
// in Go avoids) from refretry's own work.
const floorSource = `package main

import (
	"os"
	"os/exec"
)

func main() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			os.Exit(ee.ExitCode())
		}
		os.Exit(127)
	}
}
`

// emptySource is a Go program that returns from main at once. N of them
// started together cost what the Go runtime's start and exit cost, which
// any client written in Go pays before doing anything, refretry included.
const emptySource = `package main

func main() {}
`

// buildFloor compiles floorSource (cgo off, as refretry is built) into dir.
func buildFloor(dir string) (string, error) {
	bin, err := buildGo(dir, "floor", floorSource)
	if err != nil {
		return "", fmt.Errorf("building the minimal Go wrapper: %w", err)
	}
	return bin, nil
}

// buildEmpty compiles emptySource (cgo off) into dir.
func buildEmpty(dir string) (string, error) {
	bin, err := buildGo(dir, "empty", emptySource)
	if err != nil {
		return "", fmt.Errorf("building the empty Go program: %w", err)
	}
	return bin, nil
}

// buildGo compiles a one-file main package with cgo off into dir/name.
func buildGo(dir, name, source string) (string, error) {
	src := filepath.Join(dir, name+"-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(source), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module "+name+"\n\ngo 1.21\n"), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%v\n%s", err, out)
	}
	return bin, nil
}
