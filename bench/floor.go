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

// buildFloor compiles floorSource (cgo off, as refretry is built) into dir.
func buildFloor(dir string) (string, error) {
	src := filepath.Join(dir, "floor-src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "main.go"), []byte(floorSource), 0o644); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(src, "go.mod"), []byte("module floor\n\ngo 1.21\n"), 0o644); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "floor")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the minimal Go wrapper: %v\n%s", err, out)
	}
	return bin, nil
}
