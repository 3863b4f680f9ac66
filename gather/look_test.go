package gather

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/refretry/refretry/internal/harness/fakegit/fakegittest"
)

// TestNextLookPacesSlowLooks: without a forecast, a waiter's next look is spaced by
// when its commit may land and by lookRate while looks are quick; when its last look
// was slow (a remote that slows under load), the waiters together keep about one look
// in flight: the number staged times the last look's time, up to busyCap.
func TestNextLookPacesSlowLooks(t *testing.T) {
	t.Parallel()
	u := &run{clock: fakegittest.NewClockAt(time.Now())}
	st := state{staged: map[string]string{}}
	for i := range 64 {
		st.staged[fmt.Sprintf("01a2-%02d", i)] = "c"
	}
	id := "01a2-00" // the oldest: the first a wave takes
	quick := u.nextLook(st, id, 0, 0)
	if want := 64 * time.Second / lookRate; quick != want {
		t.Errorf("64 staged, quick looks: %v, want %v (lookRate)", quick, want)
	}
	if got, want := u.nextLook(st, id, 100*time.Millisecond, 0), 6400*time.Millisecond; got != want {
		t.Errorf("64 staged, looks of 100ms: %v, want %v", got, want)
	}
	if got := u.nextLook(st, id, 2*time.Second, 0); got != busyCap {
		t.Errorf("64 staged, looks of 2s: %v, want busyCap %v", got, busyCap)
	}
	one := state{staged: map[string]string{id: "c"}}
	if got, want := u.nextLook(one, id, 100*time.Millisecond, 0), waveCost+commitCost; got != want {
		t.Errorf("alone, looks of 100ms: %v, want %v (a wave's cost)", got, want)
	}
}

// TestNextLookForecast: with the gatherer's forecast ahead, a waiter looks a look's
// time after the wave that takes its commit lands: the forecast one when the commit
// was staged before that wave was taken, else the one after; a forecast past, or one
// absurdly far, is not waited for beyond busyCap.
func TestNextLookForecast(t *testing.T) {
	t.Parallel()
	now := time.Now()
	u := &run{clock: fakegittest.NewClockAt(now)}
	idAt := func(at time.Time) string { // a UUIDv7 whose time is at
		b, err := uuid.NewV7()
		if err != nil {
			t.Fatal(err)
		}
		ms := at.UnixMilli()
		b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
		return b.String()
	}
	f := forecast{at: now.Add(2 * time.Second), wave: 1500 * time.Millisecond}
	took := 100 * time.Millisecond
	for _, tc := range []struct {
		name   string
		eta    forecast
		staged time.Time
		want   time.Duration
	}{
		{"staged before the wave was taken", f, now.Add(-time.Second), 2*time.Second + took},
		{"staged after", f, now.Add(time.Second), 3500*time.Millisecond + took},
		{"far ahead", forecast{at: now.Add(time.Hour), wave: time.Second}, now, busyCap},
	} {
		id := idAt(tc.staged)
		st := state{staged: map[string]string{id: "c"}, eta: tc.eta}
		if got := u.nextLook(st, id, took, 0); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	past := state{staged: map[string]string{"x": "c"}, eta: forecast{at: now.Add(-time.Second), wave: 2 * time.Second}}
	for late, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
		if got := u.nextLook(past, "x", took, late); got != want {
			t.Errorf("a forecast past, %d looks late already: %v, want %v", late, got, want)
		}
	}
}

// TestParseForecast: an eta ref's last component, and what is not one.
func TestParseForecast(t *testing.T) {
	t.Parallel()
	n := newNames("main")
	f := forecast{at: time.UnixMilli(1765000000123), wave: 2500 * time.Millisecond}
	ref := n.eta(f)
	if ref != "refs/refretry/eta/main/1765000000123-2500" {
		t.Fatalf("eta ref %q", ref)
	}
	st := parseState(n, "c1\t"+ref+"\nc2\trefs/refretry/eta/main/nonsense\nc3\trefs/refretry/eta/main/5-x\n")
	if !st.eta.at.Equal(f.at) || st.eta.wave != f.wave || len(st.etaRefs) != 1 || st.etaRefs[ref] != "c1" {
		t.Errorf("parsed %+v, refs %v; want %+v from %s alone", st.eta, st.etaRefs, f, ref)
	}
}

// TestObserveProgress: what a waiter's looks count as progress, which starts its
// budget again: the branch moving, staged commits leaving, the lease changing hands or
// moving to a next wave, a new forecast; a look that shows the same as the last, or
// the first look (nothing to compare with), does not.
func TestObserveProgress(t *testing.T) {
	t.Parallel()
	clock := fakegittest.NewClock()
	u := &run{clock: clock, progressive: true}
	u.moved = clock.Now()
	w := &waiting{}
	base := state{head: "h1", lease: "l1", staged: map[string]string{"a": "c1", "b": "c2"},
		eta: forecast{at: clock.Now().Add(5 * time.Second), wave: time.Second}}
	with := func(f func(s *state)) state {
		s := base
		s.staged = map[string]string{"a": "c1", "b": "c2"}
		f(&s)
		return s
	}
	for _, tc := range []struct {
		name string
		st   state
		want bool
	}{
		{"the first look", base, false},
		{"the same again", base, false},
		{"the lease moved to the next wave", with(func(s *state) { s.lease = "l2" }), true},
		{"the same again", with(func(s *state) { s.lease = "l2" }), false},
		{"a new forecast", with(func(s *state) { s.lease = "l2"; s.eta.at = s.eta.at.Add(time.Second) }), true},
		{"the lease let go", with(func(s *state) { s.lease = ""; s.eta.at = s.eta.at.Add(time.Second) }), true},
		{"a forecast gone", with(func(s *state) { s.lease = ""; s.eta = forecast{} }), false},
		{"a staged commit left", with(func(s *state) { s.lease = ""; s.eta = forecast{}; delete(s.staged, "b") }), true},
		{"the branch moved", with(func(s *state) { s.head = "h2"; s.lease = ""; s.eta = forecast{}; delete(s.staged, "b") }), true},
	} {
		if err := clock.Sleep(t.Context(), time.Second); err != nil {
			t.Fatal(err)
		}
		before := u.moved
		u.observe(w, tc.st)
		if got := u.moved != before; got != tc.want {
			t.Errorf("%s: progress %v, want %v", tc.name, got, tc.want)
		}
	}
}
