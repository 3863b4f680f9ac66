package push

import (
	"strings"
	"testing"

	"github.com/refretry/refretry/internal/gitexec"
)

// TestWriteOutputOrder: without --porcelain, what git prints while pushing (the
// server's lines, its warnings) comes before the rendered table, its errors and
// advice after; its progress is left out (the attempt wrote it as it came); what git
// printed on standard output besides the porcelain stays there.
func TestWriteOutputOrder(t *testing.T) {
	t.Parallel()
	last := gitexec.Captured{
		Code: 1,
		Stdout: []byte("To file:///r.git\n!\trefs/heads/main:refs/heads/main\t[rejected] (fetch first)\n" +
			"branch 'x' set up to track 'origin/x'.\nDone\n"),
		Stderr: []byte("Enumerating objects: 3, done.\nremote: hello\nwarning: something\n" +
			"error: failed to push some refs to 'file:///r.git'\nhint: Updates were rejected\nhint:\n"),
	}
	var out, errOut strings.Builder
	r := &pushRun{stdout: &out, stderr: &errOut}
	if err := r.writeOutput(ParseArgs([]string{"origin", "main"}), last); err != nil {
		t.Fatal(err)
	}
	wantErr := "remote: hello\nwarning: something\n" +
		"To file:///r.git\n ! [rejected]        main -> main (fetch first)\n" +
		"error: failed to push some refs to 'file:///r.git'\nhint: Updates were rejected\nhint:\n"
	if errOut.String() != wantErr {
		t.Errorf("stderr:\n%q\nwant\n%q", errOut.String(), wantErr)
	}
	if want := "branch 'x' set up to track 'origin/x'.\n"; out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
}
