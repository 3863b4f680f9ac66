//go:build linux

package group

import (
	"strings"
	"testing"
)

func TestRefSet(t *testing.T) {
	t.Parallel()
	s := newRefSet()
	s.add("refs/heads/a/b")
	for ref, want := range map[string]bool{
		"refs/heads/a/b":   true,  // the same ref
		"refs/heads/a":     true,  // its directory
		"refs/heads/a/b/c": true,  // below it
		"refs/heads/a/c":   false, // a sibling
		"refs/heads/ab":    false,
	} {
		if got := s.conflicts(ref); got != want {
			t.Errorf("conflicts(%q) = %v, want %v", ref, got, want)
		}
	}
}

func TestBlamed(t *testing.T) {
	t.Parallel()
	ms := []entry{{req: request{ref: "refs/heads/a"}}, {req: request{ref: "refs/heads/a/b"}}, {req: request{ref: "refs/heads/c"}}}
	for stderr, want := range map[string]string{
		"fatal: cannot lock ref 'refs/heads/c': is at 1 but expected 2\n":                          "refs/heads/c",
		"fatal: cannot process 'refs/heads/a' and 'refs/heads/a/b' at the same time\n":             "refs/heads/a refs/heads/a/b",
		"hint: x\nfatal: in 'preparing' phase, update aborted by the reference-transaction hook\n": "",
		"fatal: trying to write ref 'refs/heads/a/b' with nonexistent object 1\n":                  "refs/heads/a/b",
	} {
		named := blamed([]byte(stderr), ms)
		var got []string
		for _, m := range ms {
			if named[m.req.ref] {
				got = append(got, m.req.ref)
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%q: blamed %v, want %s", stderr, got, want)
		}
	}
}
