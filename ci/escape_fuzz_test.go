package ci

import (
	"strings"
	"testing"
)

// unescapeWorkflow decodes what the GitHub runner decodes, left to right in one pass.
func unescapeWorkflow(s string, property bool) string {
	codes := map[string]string{"%25": "%", "%0D": "\r", "%0A": "\n"}
	if property {
		codes["%3A"], codes["%2C"] = ":", ","
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+3 <= len(s) {
			if dec, ok := codes[s[i:i+3]]; ok {
				b.WriteString(dec)
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// FuzzWorkflowEscape checks the workflow-command encoders: the result holds no
// character that would end the command or its property early, and the runner's
// decoding gives back exactly the original.
func FuzzWorkflowEscape(f *testing.F) {
	for _, s := range []string{"", "a%b", "%25", "x\r\ny", "k:v,w", "%0A%", "::error::x", "100%\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := escapeData(s)
		if strings.ContainsAny(d, "\r\n") {
			t.Fatalf("escapeData(%q) = %q keeps a line break", s, d)
		}
		if got := unescapeWorkflow(d, false); got != s {
			t.Fatalf("escapeData(%q) = %q decodes to %q", s, d, got)
		}
		p := escapeProperty(s)
		if strings.ContainsAny(p, "\r\n:,") {
			t.Fatalf("escapeProperty(%q) = %q keeps a separator", s, p)
		}
		if got := unescapeWorkflow(p, true); got != s {
			t.Fatalf("escapeProperty(%q) = %q decodes to %q", s, p, got)
		}
	})
}

// FuzzParseFormat checks the log-format parser: it accepts exactly the known names
// (any case, surrounding space), what it returns parses to itself, and everything
// else is refused with errUnknownFormat.
func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{"auto", "TEXT", " json ", "GitHub", "gitlab", "", "jsonl", "gith\u0130b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ParseFormat(s)
		known := false
		for _, k := range formats {
			known = known || strings.EqualFold(strings.TrimSpace(s), string(k)) && isASCII(s)
		}
		if err != nil {
			if known {
				t.Fatalf("ParseFormat(%q) refused a known name: %v", s, err)
			}
			return
		}
		if again, err := ParseFormat(string(got)); err != nil || again != got {
			t.Fatalf("ParseFormat(%q) = %q, which parses to %q, %v", s, got, again, err)
		}
		if isASCII(s) && !known {
			t.Fatalf("ParseFormat(%q) = %q, not a known name", s, got)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
