package gitopts

import "testing"

var cmd = Command{ShortValues: "oj",
	Flags: []string{
		"prune", "prune-tags", "porcelain", "no-verify", "verbose",
	},
	Values: []string{
		"push-option", "depth", "deepen",
	},
}

// TestOption: full names, unambiguous prefixes, negations, and what git refuses, as
// git's parse_long_opt reads them (transaction's TestParseArgsLikeGit runs real gits on
// update-ref's spellings of each kind).
func TestOption(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		arg     string
		name    string
		negated bool
		ok      bool
	}{
		{"--prune", "prune", false, true},        // exact, though also a prefix of prune-tags
		{"--prune-t", "prune-tags", false, true}, // prefix
		{"--push-opt=x", "push-option", false, true},
		{"--no-prune", "prune", true, true},
		{"--no-pru", "", false, false},         // prune or prune-tags
		{"--no-porc", "porcelain", true, true}, // negated prefix
		{"--no-verify", "no-verify", false, true},
		{"--no-ver", "", false, false},              // no-verify, or verbose negated
		{"--verify", "no-verify", true, true},       // an option spelled no-x is negated by --x
		{"--verif", "no-verify", true, true},        // and by its prefixes
		{"--no-no-verify", "no-verify", true, true}, // and by --no-no-x
		{"--no-no-v", "no-verify", true, true},
		{"--no-no-prune", "", false, false}, // --no-no- names only options spelled no-x
		{"--n", "", false, false},           // every option negated
		{"--no", "", false, false},
		{"--no=x", "", false, false},
		{"--p", "", false, false},
		{"--de", "", false, false},
		{"--dep", "depth", false, true},
		{"--nosuch", "", false, false},
		{"--", "", false, false},
		{"-p", "", false, false},
		{"prune", "", false, false},
	} {
		name, negated, ok := cmd.Option(tc.arg)
		if name != tc.name || negated != tc.negated || ok != tc.ok {
			t.Errorf("Option(%q) = %q %v %v, want %q %v %v", tc.arg, name, negated, ok, tc.name, tc.negated, tc.ok)
		}
	}
}

// TestShortsAndTakesNext: a cluster's letters end at the first that takes a value.
func TestShortsAndTakesNext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		arg    string
		shorts string
		next   bool
	}{
		{"-o", "o", true},
		{"-fo", "fo", true},
		{"-ofoo", "o", false},
		{"-qj", "qj", true},
		{"-j4", "j", false},
		{"-fq", "fq", false},
		{"-", "", false},
		{"--depth", "", true},
		{"--depth=1", "", false},
		{"--dep", "", true},
		{"--no-depth", "", false},
		{"--prune", "", false},
		{"origin", "", false},
	} {
		if got := cmd.Shorts(tc.arg); got != tc.shorts {
			t.Errorf("Shorts(%q) = %q, want %q", tc.arg, got, tc.shorts)
		}
		if got := cmd.TakesNext(tc.arg); got != tc.next {
			t.Errorf("TakesNext(%q) = %v, want %v", tc.arg, got, tc.next)
		}
	}
}
