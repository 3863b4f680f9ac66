package gitserver_test

import (
	"fmt"
	"os"
	"testing"
)

// scratch holds what the tests build once per test binary and copy (the starts of
// newRaced); TestMain removes it.
var scratch string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gitserver-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	scratch = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
