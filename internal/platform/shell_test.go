package platform

import (
	"os/exec"
	"testing"
)

// TestShellQuote: a shell reads the quoted string back as it was.
func TestShellQuote(t *testing.T) {
	for _, s := range []string{"", "plain", "it's", "'", `a "b" $c \d`, "new\nline", "*?[]"} {
		out, err := exec.Command("sh", "-c", "printf %s "+ShellQuote(s)).Output()
		if err != nil {
			t.Skip(err)
		}
		if string(out) != s {
			t.Errorf("ShellQuote(%q) read back as %q", s, out)
		}
	}
}
