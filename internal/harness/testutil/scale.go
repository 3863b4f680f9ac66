package testutil

import (
	"os"
	"testing"
)

// ScaleEnv names the one knob that sizes the tests which start processes by the
// hundred, hunt races, or push a million updates (docs/testing.md): unset (or
// "small"), they run at a size that keeps a plain `go test ./...` within minutes;
// "stress", the size the stress tier (scripts/test.sh --stress) runs them at. Every
// test reads it through Stress or Scale, never by itself.
const ScaleEnv = "REFRETRY_TEST_SCALE"

// Stress reports whether the tests run at the stress tier's size. Any value of
// REFRETRY_TEST_SCALE but "", "small" and "stress" fails the test, naming the
// values it takes: a typo must not quietly run the small tests in the stress tier.
func Stress(t testing.TB) bool {
	t.Helper()
	switch v := os.Getenv(ScaleEnv); v {
	case "", "small":
		return false
	case "stress":
		return true
	default:
		t.Fatalf(`%s=%q: want "small" (the default) or "stress"`, ScaleEnv, v)
		return false
	}
}

// Scale returns small, or full when the tests run at the stress tier's size.
func Scale(t testing.TB, small, full int) int {
	t.Helper()
	if Stress(t) {
		return full
	}
	return small
}

// Cells returns the cells of a matrix test (git versions by backends, say): all of
// them at the stress size; at the default size only those whose indexes small names,
// which the caller picks so that every value of every axis still appears in one
// cell. An index out of range fails the test.
func Cells[T any](t testing.TB, all []T, small ...int) []T {
	t.Helper()
	if Stress(t) {
		return all
	}
	picked := make([]T, 0, len(small))
	for _, i := range small {
		if i < 0 || i >= len(all) {
			t.Fatalf("testutil.Cells: index %d of %d cells", i, len(all))
			return nil
		}
		picked = append(picked, all[i])
	}
	return picked
}
