package transaction

import "testing"

func TestArgsRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"refs/heads/a", "oid"}, "refs/heads/a"},
		{[]string{"-m", "msg", "refs/heads/a", "oid"}, "refs/heads/a"},
		{[]string{"-mmsg", "refs/heads/a", "oid"}, "refs/heads/a"},
		{[]string{"-d", "refs/heads/a"}, "refs/heads/a"},
		{[]string{"--no-deref", "-zm", "msg", "refs/heads/a", "oid"}, "refs/heads/a"},
		{[]string{"--", "-weird", "oid"}, "-weird"},
		{[]string{"--create-reflog"}, ""},
	}
	for _, tt := range tests {
		if got := (Args{Raw: tt.args}).Ref(); got != tt.want {
			t.Errorf("Ref(%q) = %q, want %q", tt.args, got, tt.want)
		}
	}
}
