package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// TestQuickGlobalsMatchKong: the kong-free path for refretry's options reads every
// accepted command line exactly as kong does, and hands kong what it does not accept.
func TestQuickGlobalsMatchKong(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args  []string
		quick bool // taken by the quick path; otherwise left to kong
	}{
		{[]string{}, true},
		{[]string{"-C", "/tmp/a"}, true},
		{[]string{"-C/tmp/a", "-C", "b", "--directory=c", "--directory", "d=e"}, true},
		{[]string{"--timeout", "5s", "--max-attempts=3", "--initial-delay", "1ms", "--max-delay=2s"}, true},
		{[]string{"--stale-after", "1m", "--git", "/usr/bin/git", "--log-format=json", "--log-file", "/tmp/x.log"}, true},
		{[]string{"--timeout=1s", "--timeout", "2s"}, true}, // the last one wins
		{[]string{"--coalesce", "--break-stale-locks", "--timeout", "-"}, true},
		{[]string{"--timeout="}, true},
		{[]string{"--help"}, false},
		{[]string{"--timeout", "--max-attempts=3"}, false},
		{[]string{"-C", "-x"}, false},
	}
	for _, tc := range cases {
		own, _, rest := splitArgs(append(append([]string{}, tc.args...), "refs/heads/x", "0123"))
		if strings.Join(rest, " ") != "refs/heads/x 0123" {
			t.Fatalf("%q: splitArgs left %q", tc.args, rest)
		}
		quick, ok := quickGlobals(own)
		if ok != tc.quick {
			t.Errorf("%q: quick path took it = %v, want %v", tc.args, ok, tc.quick)
			continue
		}
		if !ok {
			continue
		}
		var cli CLI
		exited := false
		parser, err := kong.New(&cli, kong.Vars(defaultVars()), kong.Exit(func(int) { exited = true }),
			kong.Writers(new(strings.Builder), new(strings.Builder)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := parser.Parse(append(own, "update-ref")); err != nil || exited {
			t.Errorf("%q: quick path accepted what kong rejects (%v)", tc.args, err)
			continue
		}
		if !reflect.DeepEqual(*quick, cli.Globals) {
			t.Errorf("%q:\nquick %+v\nkong  %+v", tc.args, *quick, cli.Globals)
		}
	}
}
