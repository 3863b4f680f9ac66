package testutil

import (
	"flag"
	"runtime"
	"strconv"
	"testing"
)

// TestRaiseParallel: without -parallel on the command line it becomes
// ParallelPerCPU per CPU; a -parallel given there is kept.
func TestRaiseParallel(t *testing.T) {
	f := flag.Lookup("test.parallel")
	before := f.Value.String()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	t.Cleanup(func() { f.Value.Set(before) })
	RaiseParallel()
	want := strconv.Itoa(ParallelPerCPU * runtime.GOMAXPROCS(0))
	if given {
		want = before
	}
	if got := f.Value.String(); got != want {
		t.Errorf("-parallel %s after RaiseParallel (given on the command line: %v, was %s), want %s", got, given, before, want)
	}
}
