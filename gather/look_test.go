package gather

import (
	"fmt"
	"testing"
	"time"
)

// TestNextLookPacesSlowLooks: a waiter's next look is spaced by when its commit may
// land and by lookRate while looks are quick; when its last look was slow (a remote
// that slows under load), the waiters together keep about one look in flight: the
// number staged times the last look's time, up to busyCap.
func TestNextLookPacesSlowLooks(t *testing.T) {
	t.Parallel()
	st := state{staged: map[string]string{}}
	for i := range 64 {
		st.staged[fmt.Sprintf("01a2-%02d", i)] = "c"
	}
	id := "01a2-00" // the oldest: the first a wave takes
	quick := nextLook(st, id, 0)
	if want := 64 * time.Second / lookRate; quick != want {
		t.Errorf("64 staged, quick looks: %v, want %v (lookRate)", quick, want)
	}
	if got, want := nextLook(st, id, 100*time.Millisecond), 6400*time.Millisecond; got != want {
		t.Errorf("64 staged, looks of 100ms: %v, want %v", got, want)
	}
	if got := nextLook(st, id, 2*time.Second); got != busyCap {
		t.Errorf("64 staged, looks of 2s: %v, want busyCap %v", got, busyCap)
	}
	one := state{staged: map[string]string{id: "c"}}
	if got, want := nextLook(one, id, 100*time.Millisecond), waveCost+commitCost; got != want {
		t.Errorf("alone, looks of 100ms: %v, want %v (a wave's cost)", got, want)
	}
}
