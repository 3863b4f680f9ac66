package forgeapi

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The GraphQL this package reads: operations (query, mutation, or a bare selection
// set) with variable definitions and defaults, fields with aliases and arguments,
// and inline fragments ("... on Commit { oid }"). Named fragments, directives and
// block strings are not read: a document using them gets a parse error.

// gqlDoc is a parsed document.
type gqlDoc struct{ ops []*gqlOp }

// gqlOp is one operation.
type gqlOp struct {
	typ, name string // typ: "query" or "mutation"
	vars      []gqlVarDef
	sel       []*gqlSel
}

// gqlVarDef is a variable's definition, with its default value.
type gqlVarDef struct {
	name   string
	def    any
	hasDef bool
}

// gqlSel is a field (name, alias, args, sub-selection) or, with frag set, an
// inline fragment on type on ("" for any).
type gqlSel struct {
	alias, name string
	args        map[string]any
	sel         []*gqlSel
	frag        bool
	on          string
	line, col   int
}

// key is the field's name in the answer.
func (s *gqlSel) key() string {
	if s.alias != "" {
		return s.alias
	}
	return s.name
}

// gqlVar is a reference to a variable in an argument's value.
type gqlVar string

// operation is the operation named name, or the only one when name is empty; nil
// when there is none such.
func (d *gqlDoc) operation(name string) *gqlOp {
	for _, op := range d.ops {
		if op.name == name || name == "" && len(d.ops) == 1 {
			return op
		}
	}
	return nil
}

// token kinds: a punctuator is its own byte.
const (
	tokEOF    = 0
	tokName   = 'n'
	tokString = 's'
	tokNumber = '0'
	tokSpread = '.'
)

type token struct {
	kind      byte
	text      string
	line, col int
}

type lexer struct {
	src       string
	pos       int
	line, col int
}

// skip passes white space, commas and comments.
func (l *lexer) skip() {
	for l.pos < len(l.src) {
		switch c := l.src[l.pos]; {
		case c == '\n':
			l.pos, l.line, l.col = l.pos+1, l.line+1, 1
		case c == ' ' || c == '\t' || c == '\r' || c == ',':
			l.pos, l.col = l.pos+1, l.col+1
		case c == '#':
			for l.pos < len(l.src) && l.src[l.pos] != '\n' {
				l.pos++
			}
		default:
			return
		}
	}
}

func (l *lexer) next() (token, error) {
	l.skip()
	t := token{line: l.line, col: l.col}
	if l.pos >= len(l.src) {
		return t, nil
	}
	start := l.pos
	c := l.src[l.pos]
	switch {
	case strings.IndexByte("!$()[]{}:=@|&", c) >= 0:
		l.pos++
		t.kind, t.text = c, string(c)
	case c == '.':
		if !strings.HasPrefix(l.src[l.pos:], "...") {
			return t, l.errorf(t, "unexpected \".\"")
		}
		l.pos += 3
		t.kind, t.text = tokSpread, "..."
	case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z':
		for l.pos < len(l.src) && isNameByte(l.src[l.pos]) {
			l.pos++
		}
		t.kind, t.text = tokName, l.src[start:l.pos]
	case c == '-' || '0' <= c && c <= '9':
		l.pos++
		for l.pos < len(l.src) && strings.IndexByte("0123456789.eE+-", l.src[l.pos]) >= 0 {
			l.pos++
		}
		t.kind, t.text = tokNumber, l.src[start:l.pos]
	case c == '"':
		s, err := l.str(t)
		if err != nil {
			return t, err
		}
		t.kind, t.text = tokString, s
	default:
		return t, l.errorf(t, "unexpected %q", c)
	}
	l.col += utf8.RuneCountInString(l.src[start:l.pos])
	return t, nil
}

func isNameByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// str reads a quoted string (not a block string) with its escapes.
func (l *lexer) str(t token) (string, error) {
	if strings.HasPrefix(l.src[l.pos:], `"""`) {
		return "", l.errorf(t, "block strings are not read here")
	}
	var b strings.Builder
	for i := l.pos + 1; i < len(l.src); i++ {
		switch c := l.src[i]; c {
		case '"':
			l.pos = i + 1
			return b.String(), nil
		case '\n':
			return "", l.errorf(t, "unterminated string")
		case '\\':
			if i+1 >= len(l.src) {
				return "", l.errorf(t, "unterminated string")
			}
			n, err := unescape(&b, l.src[i+1:])
			if err != nil {
				return "", l.errorf(t, "%v", err)
			}
			i += n
		default:
			b.WriteByte(c)
		}
	}
	return "", l.errorf(t, "unterminated string")
}

// unescape writes the escape at the start of s (after its backslash) and returns the
// number of bytes it took.
func unescape(b *strings.Builder, s string) (int, error) {
	simple := map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}
	if r, ok := simple[s[0]]; ok {
		b.WriteByte(r)
		return 1, nil
	}
	if s[0] != 'u' || len(s) < 5 {
		return 0, fmt.Errorf("bad escape")
	}
	n, err := strconv.ParseUint(s[1:5], 16, 32)
	if err != nil {
		return 0, fmt.Errorf("bad escape")
	}
	b.WriteRune(rune(n))
	return 5, nil
}

func (l *lexer) errorf(t token, format string, args ...any) error {
	return fmt.Errorf("Parse error at [%d, %d]: %s", t.line, t.col, fmt.Sprintf(format, args...))
}
