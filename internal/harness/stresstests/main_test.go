package main

import (
	"slices"
	"testing"
)

// TestScan: a test is listed when it reaches one of testutil's sizing functions,
// under whatever name the file imports testutil, directly, in a closure, or through
// functions and methods of its package; a method of the same name on another type
// does not count.
func TestScan(t *testing.T) {
	got, err := scan("testdata")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"./testdata/pkg TestDirect",
		"./testdata/pkg TestInClosure",
		"./testdata/pkg TestThroughMethod",
		"./testdata/pkg TestThroughTwo",
	}
	if !slices.Equal(got, want) {
		t.Errorf("scan = %q\nwant %q", got, want)
	}
}

// TestScanModule: the module's own list holds the tests known to be sized, through a
// helper included (push's combos).
func TestScanModule(t *testing.T) {
	got, err := scan("../../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"../../.. TestCoalesceMixed", "../../../push TestRebaseConcurrent", "../../../fetch TestRefDeletedDuringFetch"} {
		if !slices.Contains(got, want) {
			t.Errorf("scan of the module lacks %q:\n%q", want, got)
		}
	}
}
