package testutil

import "testing"

// Hunt runs the rounds of a test that hunts a race only timing brings about: round
// runs round i, asserts its outcome, and reports whether it met the race.
//
// At the default size it runs small rounds and logs how many met the race: a quick
// run checks the outcome under the churn, and a deterministic replay of the race's
// output (a captured fixture) checks what refretry makes of it. At the stress size
// (Stress) it runs full rounds and, where the race can happen at all (possible), goes
// on until a round has met it, up to limit rounds in all, and fails the test if none
// did: a hunt that never met its race proved nothing.
func Hunt(t testing.TB, small, full, limit int, possible bool, round func(i int) (met bool)) {
	t.Helper()
	stress := Stress(t)
	rounds := small
	if stress {
		rounds = full
	}
	met, i := 0, 0
	for ; i < rounds || stress && possible && met == 0 && i < limit; i++ {
		if round(i) {
			met++
		}
		if t.Failed() {
			return
		}
	}
	t.Logf("%d of %d rounds met the race", met, i)
	switch {
	case stress && possible && met == 0:
		t.Errorf("none of %d rounds met the race: the hunt proved nothing", i)
	case !stress && possible:
		t.Logf("the hunt must meet the race only at %s=stress", ScaleEnv)
	}
}
