package ci

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable shows every control character, and every byte that is not UTF-8, as a
// Go-style escape (\n, \r, \x1b, \u2028, …), so that nothing it returns can end a line,
// move the cursor, or start a terminal escape sequence.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !(unicode.IsPrint(r) || r == ' ') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x100 && !(unicode.IsPrint(r) || r == ' '):
			fmt.Fprintf(&b, `\x%02x`, r)
		case !(unicode.IsPrint(r) || r == ' '):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
