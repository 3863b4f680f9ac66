package push

import (
	"strings"
	"testing"
)

// TestNotRebasable: the pushes a job's opt-in (settings.PushRebase) never rebases, and
// those it does, with options anywhere before "--" as git reads them.
func TestNotRebasable(t *testing.T) {
	t.Parallel()
	tag := Report{Refs: []RefStatus{{Flag: '!', From: "refs/heads/main", To: "refs/heads/main"}, {Flag: '=', From: "refs/tags/v1", To: "refs/tags/v1"}}}
	tests := []struct {
		args []string
		rep  Report
		want string // a word of the reason; "" when the push may be rebased
	}{
		{[]string{"origin", "results"}, Report{}, ""},
		{[]string{"--set-upstream", "origin", "HEAD:results", "--follow-tags", "--atomic"}, Report{}, ""},
		{nil, Report{}, ""},
		{[]string{"-o", "-f", "origin", "main"}, Report{}, ""}, // -f is -o's value
		{[]string{"--no-force", "origin", "main"}, Report{}, ""},
		{[]string{"origin", "main", "--", "-f"}, Report{}, ""}, // a refspec after --
		{[]string{"-f", "origin", "main"}, Report{}, "force"},
		{[]string{"-qf", "origin", "main"}, Report{}, "force"},
		{[]string{"origin", "main", "--force"}, Report{}, "force"},
		{[]string{"--force-with", "origin", "main"}, Report{}, "lease"}, // a prefix git accepts
		{[]string{"origin", "+main"}, Report{}, "force"},
		{[]string{"origin", "+HEAD:main"}, Report{}, "force"},
		{[]string{"--force-with-lease", "origin", "main"}, Report{}, "lease"},
		{[]string{"--force-with-lease=main:abc", "origin", "main"}, Report{}, "lease"},
		{[]string{"--mirror", "origin"}, Report{}, "mirror"},
		{[]string{"-d", "origin", "old"}, Report{}, "deletion"},
		{[]string{"origin", "--delete", "old"}, Report{}, "deletes"},
		{[]string{"origin", ":old"}, Report{}, "deletion"},
		{[]string{"--prune", "origin", "refs/heads/*:refs/heads/*"}, Report{}, "deletes"},
		{[]string{"--tags", "origin"}, Report{}, "tags"},
		{[]string{"origin", "refs/tags/v1"}, Report{}, "tag"},
		{[]string{"origin", "HEAD:refs/tags/v1"}, Report{}, "tag"},
		{[]string{"origin", "main", "v1"}, tag, "tag"}, // a short tag name: the report shows it
	}
	for _, tc := range tests {
		got := notRebasable(ParseArgs(tc.args), tc.rep)
		if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
			t.Errorf("notRebasable(%q) = %q, want a reason with %q", tc.args, got, tc.want)
		}
	}
}
