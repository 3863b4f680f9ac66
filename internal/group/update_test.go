package group

import (
	"fmt"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	a := strings.Repeat("a", 40)
	b := strings.Repeat("b", 40)
	z := strings.Repeat("0", 40)
	cases := []struct {
		args []string
		ok   bool
		cmd  string
		opts []string
	}{
		{[]string{"refs/heads/x", a}, true, "update refs/heads/x\x00" + a + "\x00\x00", nil},
		{[]string{"refs/heads/x", a, b}, true, "update refs/heads/x\x00" + a + "\x00" + b + "\x00", nil},
		{[]string{"refs/heads/x", a, ""}, true, "update refs/heads/x\x00" + a + "\x00" + z + "\x00", nil},
		{[]string{"-m", "msg", "--no-deref", "--create-reflog", "refs/heads/x", a}, true, "update refs/heads/x\x00" + a + "\x00\x00", []string{"-m", "msg", "--no-deref", "--create-reflog"}},
		{[]string{"-mmsg", "refs/heads/x", a}, true, "update refs/heads/x\x00" + a + "\x00\x00", []string{"-m", "msg"}},
		{[]string{"-d", "refs/heads/x"}, true, "delete refs/heads/x\x00\x00", nil},
		{[]string{"-d", "refs/heads/x", b}, true, "delete refs/heads/x\x00" + b + "\x00", nil},
		{[]string{"-d", "refs/heads/x", z}, true, "delete refs/heads/x\x00\x00", nil},
		{[]string{"-d", "refs/heads/x", ""}, true, "delete refs/heads/x\x00\x00", nil},
		{[]string{"refs/heads/x", "HEAD"}, false, "", nil},                                                                    // a revision: git resolves it
		{[]string{"refs/heads/x", strings.ToUpper(a)}, false, "", nil},                                                        // not the plain spelling
		{[]string{"refs/heads/x", a, strings.Repeat("b", 64)}, false, "", nil},                                                // mixed lengths
		{[]string{"HEAD", a}, false, "", nil},                                                                                 // not under refs/
		{[]string{"refs/bisect/bad", a}, false, "", nil},                                                                      // per-worktree
		{[]string{"refs/heads/a..b", a}, false, "", nil},                                                                      // invalid
		{[]string{"refs/heads/x.lock", a}, false, "", nil},                                                                    // invalid
		{[]string{"refs/heads/x", a, b, a}, false, "", nil},                                                                   // usage
		{[]string{"-d", "refs/heads/x", a, b}, false, "", nil},                                                                // usage
		{[]string{"--no-d", "refs/heads/x", a}, false, "", nil},                                                               // abbreviation
		{[]string{"-dm", "x", "refs/heads/x"}, false, "", nil},                                                                // bundle
		{[]string{"--", "refs/heads/x", a}, false, "", nil},                                                                   // --
		{[]string{"-m", "", "refs/heads/x", a}, false, "", nil},                                                               // git refuses it
		{[]string{"--stdin"}, false, "", nil},                                                                                 // not a single-ref form
		{[]string{"refs/heads/x", a, "-m"}, false, "", nil},                                                                   // -m without value
		{[]string{"refs/heads/x", "--no-deref", a}, true, "update refs/heads/x\x00" + a + "\x00\x00", []string{"--no-deref"}}, // options anywhere, as git
	}
	for _, tc := range cases {
		u, o, ok := Parse(tc.args)
		if ok != tc.ok {
			t.Errorf("%q: ok %v, want %v", tc.args, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if got := u.command(); got != tc.cmd {
			t.Errorf("%q: command %q, want %q", tc.args, got, tc.cmd)
		}
		if got := o.args(); fmt.Sprint(got) != fmt.Sprint(tc.opts) {
			t.Errorf("%q: options %q, want %q", tc.args, got, tc.opts)
		}
	}
}
