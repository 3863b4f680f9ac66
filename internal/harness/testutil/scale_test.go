package testutil

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that records Fatalf's and Errorf's messages instead of
// ending or failing the test.
type recorder struct {
	testing.TB
	fatal, errs string
}

func (r *recorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }
func (r *recorder) Errorf(format string, args ...any) { r.errs += fmt.Sprintf(format, args...) }
func (r *recorder) Failed() bool                      { return r.fatal != "" || r.errs != "" }

// TestScale: the knob's values pick the size; an unknown value fails the test with
// a message naming the knob and the values it takes.
func TestScale(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
		fatal string
	}{
		{"", 2, ""},
		{"small", 2, ""},
		{"stress", 20, ""},
		{"full", 2, `REFRETRY_TEST_SCALE="full": want "small" (the default) or "stress"`},
		{"STRESS", 2, `REFRETRY_TEST_SCALE="STRESS": want "small" (the default) or "stress"`},
	} {
		t.Run(tc.value, func(t *testing.T) {
			t.Setenv(ScaleEnv, tc.value)
			rec := &recorder{TB: t}
			if got := Scale(rec, 2, 20); got != tc.want {
				t.Errorf("Scale(2, 20) = %d, want %d", got, tc.want)
			}
			if rec.fatal != tc.fatal {
				t.Errorf("failure %q, want %q", rec.fatal, tc.fatal)
			}
		})
	}
}

// TestHunt: by default a hunt runs its small rounds whether or not they meet the
// race; at stress size it runs its full rounds, goes on until one meets the race
// where the race can happen, and fails when none did within its limit.
func TestHunt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scale    string
		possible bool
		metAt    int // the round that meets the race; -1: none
		rounds   int // how many rounds are run
		errs     string
	}{
		{"default never met", "", true, -1, 2, ""},
		{"default met late", "", true, 7, 2, ""},
		{"stress met within full", "stress", true, 1, 3, ""},
		{"stress met after full", "stress", true, 7, 8, ""},
		{"stress never met", "stress", true, -1, 10, "none of 10 rounds met the race: the hunt proved nothing"},
		{"stress impossible", "stress", false, -1, 3, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(ScaleEnv, tc.scale)
			rec := &recorder{TB: t}
			ran := 0
			Hunt(rec, 2, 3, 10, tc.possible, func(i int) bool {
				if i != ran {
					t.Errorf("round %d after %d rounds", i, ran)
				}
				ran++
				return i == tc.metAt
			})
			if ran != tc.rounds || rec.errs != tc.errs {
				t.Errorf("%d rounds, failure %q; want %d, %q", ran, rec.errs, tc.rounds, tc.errs)
			}
		})
	}
}

// TestHuntStopsAtFailure: a round that fails the test ends the hunt.
func TestHuntStopsAtFailure(t *testing.T) {
	t.Setenv(ScaleEnv, "stress")
	rec := &recorder{TB: t}
	ran := 0
	Hunt(rec, 2, 3, 10, true, func(i int) bool {
		ran++
		if i == 1 {
			rec.Errorf("round %d failed", i)
		}
		return false
	})
	if ran != 2 || rec.errs != "round 1 failed" {
		t.Errorf("%d rounds, failure %q; want 2, %q", ran, rec.errs, "round 1 failed")
	}
}

// TestCells: the default size keeps the cells named, in the order named; the stress
// size keeps every cell; an index past the end fails the test, naming it.
func TestCells(t *testing.T) {
	all := []string{"a", "b", "c", "d"}
	t.Setenv(ScaleEnv, "")
	if got := Cells(t, all, 3, 0); fmt.Sprint(got) != "[d a]" {
		t.Errorf("default size: %v, want [d a]", got)
	}
	rec := &recorder{TB: t}
	Cells(rec, all, 4)
	if rec.fatal != "testutil.Cells: index 4 of 4 cells" {
		t.Errorf("index past the end: failure %q", rec.fatal)
	}
	t.Setenv(ScaleEnv, "stress")
	if got := Cells(t, all, 3); fmt.Sprint(got) != "[a b c d]" {
		t.Errorf("stress size: %v, want every cell", got)
	}
}
