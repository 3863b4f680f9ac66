package text

import (
	"os/exec"
	"testing"
)

func TestFirstLine(t *testing.T) {
	for in, want := range map[string]string{"": "", "a": "a", "a\nb": "a", "\nb": ""} {
		if got := FirstLine(in); got != want {
			t.Errorf("FirstLine(%q) = %q, want %q", in, got, want)
		}
	}
}

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
