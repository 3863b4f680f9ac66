package ci

import (
	"strings"
	"testing"
)

func TestEscape(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, data, prop string }{
		{"plain", "plain", "plain"},
		{"100%", "100%25", "100%25"},
		{"a\r\nb", "a%0D%0Ab", "a%0D%0Ab"},
		{"k: v, w", "k: v, w", "k%3A v%2C w"},
		{"%0A", "%250A", "%250A"},
		{"::error::x", "::error::x", "%3A%3Aerror%3A%3Ax"},
	}
	for _, tt := range tests {
		if got := escapeData(tt.in); got != tt.data {
			t.Errorf("escapeData(%q) = %q, want %q", tt.in, got, tt.data)
		}
		if got := escapeProperty(tt.in); got != tt.prop {
			t.Errorf("escapeProperty(%q) = %q, want %q", tt.in, got, tt.prop)
		}
		// The runner's decoding gives the original back.
		if got := unescape(escapeData(tt.in), false); got != tt.in {
			t.Errorf("data round trip of %q gave %q", tt.in, got)
		}
		if got := unescape(escapeProperty(tt.in), true); got != tt.in {
			t.Errorf("property round trip of %q gave %q", tt.in, got)
		}
	}
	if got := workflowCommand("error", [][2]string{{"title", "a:b,c"}, {"file", "x"}}, "m\n%"); got != "::error title=a%3Ab%2Cc,file=x::m%0A%25\n" {
		t.Errorf("workflowCommand = %q", got)
	}
}

// unescape decodes as the Actions runner does: the longer sequences first, %25 last.
func unescape(s string, property bool) string {
	pairs := []string{"%0D", "\r", "%0A", "\n"}
	if property {
		pairs = append(pairs, "%3A", ":", "%2C", ",")
	}
	s = strings.NewReplacer(pairs...).Replace(s)
	return strings.ReplaceAll(s, "%25", "%")
}
