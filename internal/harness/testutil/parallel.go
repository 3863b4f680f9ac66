package testutil

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"testing"
)

// ParallelPerCPU is how many parallel tests RaiseParallel lets run per CPU.
const ParallelPerCPU = 2

// RaiseParallel sets go test's -parallel to ParallelPerCPU tests per CPU when the
// command line did not set it. A package's TestMain calls it before m.Run when its
// tests spend most of their time waiting for the processes they start (a held lock
// let go, git's own lock wait, a lease running out): Go's default, GOMAXPROCS tests
// at a time, leaves a 2-core machine idle while two of them wait.
func RaiseParallel() {
	if !flag.Parsed() {
		flag.Parse()
	}
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", strconv.Itoa(ParallelPerCPU*runtime.GOMAXPROCS(0)))
	}
}

// Main is a TestMain for a package whose tests wait for the processes they start:
// RaiseParallel, then the tests.
func Main(m *testing.M) {
	RaiseParallel()
	os.Exit(m.Run())
}
