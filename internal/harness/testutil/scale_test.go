package testutil

import (
	"fmt"
	"testing"
)

// fatalRecorder is a testing.TB whose Fatalf records the message instead of ending
// the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatalf(format string, args ...any) { f.msg = fmt.Sprintf(format, args...) }

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
			rec := &fatalRecorder{TB: t}
			if got := Scale(rec, 2, 20); got != tc.want {
				t.Errorf("Scale(2, 20) = %d, want %d", got, tc.want)
			}
			if rec.msg != tc.fatal {
				t.Errorf("failure %q, want %q", rec.msg, tc.fatal)
			}
		})
	}
}
