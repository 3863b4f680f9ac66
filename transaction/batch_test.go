package transaction

import (
	"strings"
	"testing"
)

func TestSplitUnits(t *testing.T) {
	for _, tc := range []struct {
		input       string
		nul         bool
		refs        []string
		interactive bool
	}{
		{"update refs/heads/a 1\noption no-deref\ndelete refs/heads/b\n", false, []string{"refs/heads/a", "refs/heads/b"}, false},
		{"update refs/heads/a\x001\x00\x00option no-deref\x00create refs/heads/c\x001\x00", true, []string{"refs/heads/a", "refs/heads/c"}, false},
		{"start\nupdate refs/heads/a 1\ncommit\n", false, []string{"", "refs/heads/a", ""}, true},
		{"update refs/heads/a 1\noption no-deref\n", false, []string{"refs/heads/a", ""}, false},
	} {
		units, interactive := splitUnits(strings.NewReader(tc.input), tc.nul)
		var refs []string
		var joined string
		for _, u := range units {
			refs = append(refs, u.ref)
			joined += tc.input[u.start:u.end]
		}
		if strings.Join(refs, ",") != strings.Join(tc.refs, ",") || interactive != tc.interactive || joined != tc.input {
			t.Errorf("%q: refs %q interactive %v, joined %q", tc.input, refs, interactive, joined)
		}
	}
}

// TestParseRejections pairs stdout's rejected lines with stderr's details by refname,
// and tells a held lock on the ref's own lock file from everything else.
// TestParseRejectionsQuoted: a detail that names its ref only in quotes (a symref's
// old target) goes with that ref's rejection, not to the rest, so that it is printed
// with it whichever attempt rejected it.
func TestParseRejectionsQuoted(t *testing.T) {
	stdout := "rejected refs/x/s (null) (null) reference already exists\n"
	detail := "error: verifying symref target: 'refs/x/s': is at refs/heads/main but expected refs/heads/wrong\n"
	other := "error: something about the batch\n"
	rj, rest := parseRejections([]byte(stdout), []byte(detail+other))
	if len(rj) != 1 || string(rj[0].detail) != detail || string(rest) != other {
		t.Fatalf("%+v, rest %q", rj, rest)
	}
}

func TestParseRejections(t *testing.T) {
	stdout := "rejected refs/heads/x 8b (null) reference already exists\n" +
		"rejected refs/heads/y0 8b 0000 reference already exists\n" +
		"rejected HEAD 8b (null) reference already exists\n"
	stderr := "error: cannot lock ref 'refs/heads/y0': reference already exists\n" +
		"error: cannot lock ref 'refs/heads/x': Unable to create '/r/.git/refs/heads/x.lock': File exists.\n\n" +
		"Another git process seems to be running in this repository, or the lock file may be stale\n" +
		"error: cannot lock ref 'refs/heads/main': Unable to create '/r/.git/HEAD.lock': File exists.\n\n" +
		"Another git process seems to be running in this repository, or the lock file may be stale\n"
	rj, rest := parseRejections([]byte(stdout), []byte(stderr))
	if len(rj) != 3 || rest != nil {
		t.Fatalf("%d rejections", len(rj))
	}
	if !rj[0].lockedOwnRef("/r/.git/refs/heads/x.lock") || !strings.HasPrefix(string(rj[0].detail), "error: cannot lock ref 'refs/heads/x'") ||
		!strings.HasSuffix(string(rj[0].detail), "may be stale\n") {
		t.Errorf("x: %+v", rj[0])
	}
	if rj[0].lockedOwnRef("/r/.git/refs/heads/other.lock") {
		t.Error("x counted as contention on another ref's lock")
	}
	if rj[1].lockedOwnRef("/r/.git/refs/heads/y0.lock") || string(rj[1].detail) != "error: cannot lock ref 'refs/heads/y0': reference already exists\n" {
		t.Errorf("y0: %+v", rj[1])
	}
	if rj[2].lockedOwnRef("/r/.git/HEAD.lock") || rj[2].detail != nil {
		t.Errorf("HEAD (trap 2) must stay final: %+v", rj[2])
	}
}
