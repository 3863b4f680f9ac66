package testutil

import (
	"flag"
	"os"
	"runtime"
	"strconv"
	"sync"
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

// Together runs f(0) to f(n-1) at once, each on a goroutine of its own released
// together, and returns their results in order: racing requests, or jobs.
func Together[T any](n int, f func(i int) T) []T {
	out := make([]T, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			out[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	return out
}
