package gitmsg

import "testing"

func TestReadAdvice(t *testing.T) {
	t.Parallel()
	old := []string{"", adviceOld1, adviceOld2, adviceOld3, adviceOld4, adviceOld5}
	cases := []struct {
		name  string
		lines []string
		kind  Advice
		pid   int
		used  int
	}{
		{"short advice", []string{"", adviceAnother}, AdviceLive, 0, 2},
		{"short advice, more lines after", []string{"", adviceAnother, "remote: x"}, AdviceLive, 0, 2},
		{"2.39's five lines", old, AdviceLive, 0, 6},
		{"2.39's lines cut short", old[:5], AdviceNone, 0, 0},
		{"holder named", []string{"", "Lock may be held by process 42; if no git process is running, the lock file may be stale (PIDs can be reused)"}, AdviceLive, 42, 2},
		{"holder gone", []string{"", "Lock was held by process 7, which is no longer running; the lock file appears to be stale"}, AdviceDead, 7, 2},
		{"no blank line", []string{adviceAnother}, AdviceNone, 0, 0},
		{"unknown text", []string{"", "something else"}, AdviceNone, 0, 0},
		{"nothing", nil, AdviceNone, 0, 0},
	}
	for _, c := range cases {
		kind, pid, used := ReadAdvice(c.lines)
		if kind != c.kind || pid != c.pid || used != c.used {
			t.Errorf("%s: got (%v, %d, %d), want (%v, %d, %d)", c.name, kind, pid, used, c.kind, c.pid, c.used)
		}
	}
}

func TestStripCannotLockRef(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, inner, ref string }{
		{"cannot lock ref 'refs/heads/x': reference already exists", "reference already exists", "refs/heads/x"},
		{"cannot lock ref 'refs/heads/x' without separator", "cannot lock ref 'refs/heads/x' without separator", ""},
		{"cannot lock references", "cannot lock references", ""},
	} {
		if inner, ref := StripCannotLockRef(c.in); inner != c.inner || ref != c.ref {
			t.Errorf("%q: got (%q, %q), want (%q, %q)", c.in, inner, ref, c.inner, c.ref)
		}
	}
}
