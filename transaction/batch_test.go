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
		units, interactive := splitUnits(strings.NewReader(tc.input), tc.nul, nil)
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

// TestParseRejections pairs stdout's rejected lines with stderr's details as git 2.55
// prints them (captured with a reftable repository: a symbolic ref's rejection names
// its target and comes after the others, name conflicts last), and tells a held lock
// on the ref's own lock file from everything else.
func TestParseRejections(t *testing.T) {
	stdout := "rejected refs/heads/a1 8b 0000 reference already exists\n" +
		"rejected refs/heads/x 8b (null) reference already exists\n" +
		"rejected refs/heads/s2 (null) 0000 incorrect old value provided\n" +
		"rejected refs/heads/non-existent 0000 8b reference does not exist\n" +
		"rejected refs/heads/d 8b 0000 refname conflict\n" +
		"rejected HEAD 8b (null) reference already exists\n"
	hook := "hook: something about the batch\n"
	a1 := "error: cannot lock ref 'refs/heads/a1': reference already exists\n"
	x := "error: cannot lock ref 'refs/heads/x': Unable to create '/r/./refs/heads/x.lock': File exists.\n\n" +
		"Another git process seems to be running in this repository, or the lock file may be stale\n"
	s2 := "error: verifying symref target: 'refs/heads/s2': is at refs/heads/main but expected refs/heads/other\n"
	sym := "error: cannot lock ref 'refs/heads/symbolic': unable to resolve reference 'refs/heads/non-existent'\n"
	d := "error: 'refs/heads/d/e' exists; cannot create 'refs/heads/d'\n"
	head := "error: cannot lock ref 'refs/heads/main': Unable to create '/r/HEAD.lock': File exists.\n\n" +
		"Another git process seems to be running in this repository, or the lock file may be stale\n"
	rj, rest := parseRejections([]byte(stdout), []byte(hook+a1+x+s2+sym+d+head))
	if len(rj) != 6 {
		t.Fatalf("%d rejections", len(rj))
	}
	for i, want := range []string{a1, x, s2, sym, d, ""} {
		if string(rj[i].detail) != want {
			t.Errorf("%s: detail %q, want %q", rj[i].ref, rj[i].detail, want)
		}
	}
	if string(rest) != hook+head {
		t.Errorf("rest %q", rest)
	}
	if !rj[1].lockedOwnRef("/r/refs/heads/x.lock") {
		t.Error("x: its own lock, spelled with /./ by git, not recognised")
	}
	if rj[1].lockedOwnRef("/r/refs/heads/other.lock") {
		t.Error("x counted as contention on another ref's lock")
	}
	if rj[0].lockedOwnRef("/r/refs/heads/a1.lock") {
		t.Error("a1: a ref that exists counted as a held lock")
	}
	if rj[5].lockedOwnRef("/r/HEAD.lock") {
		t.Errorf("HEAD (trap 2) must stay final: %+v", rj[5])
	}
}

// TestParseRejectionsOldGit: git 2.50–2.53 print no details; stderr is all rest.
func TestParseRejectionsOldGit(t *testing.T) {
	stdout := "rejected refs/heads/a 8b 0000 reference already exists\n"
	other := "warning: something else\n"
	rj, rest := parseRejections([]byte(stdout), []byte(other))
	if len(rj) != 1 || rj[0].detail != nil || string(rest) != other {
		t.Fatalf("%+v, rest %q", rj, rest)
	}
}
