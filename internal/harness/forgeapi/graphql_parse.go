package forgeapi

import (
	"strconv"
	"strings"
)

// maxDepth bounds the nesting of selections and values a document may have.
const maxDepth = 64

type parser struct {
	lx    lexer
	tok   token
	depth int
}

// parseGraphQL parses a document.
func parseGraphQL(src string) (*gqlDoc, error) {
	p := &parser{lx: lexer{src: src, line: 1, col: 1}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	d := &gqlDoc{}
	for p.tok.kind != tokEOF {
		op, err := p.operation()
		if err != nil {
			return nil, err
		}
		d.ops = append(d.ops, op)
	}
	if len(d.ops) == 0 {
		return nil, p.lx.errorf(p.tok, "no operation")
	}
	return d, nil
}

func (p *parser) advance() error {
	t, err := p.lx.next()
	p.tok = t
	return err
}

// expect takes the punctuator c.
func (p *parser) expect(c byte) error {
	if p.tok.kind != c {
		return p.lx.errorf(p.tok, "expected %q, found %q", c, p.tok.text)
	}
	return p.advance()
}

// name takes a name.
func (p *parser) name() (string, error) {
	if p.tok.kind != tokName {
		return "", p.lx.errorf(p.tok, "expected a name, found %q", p.tok.text)
	}
	n := p.tok.text
	return n, p.advance()
}

func (p *parser) operation() (*gqlOp, error) {
	op := &gqlOp{typ: "query"}
	var err error
	if p.tok.kind == tokName {
		if p.tok.text != "query" && p.tok.text != "mutation" {
			return nil, p.lx.errorf(p.tok, "%q is not an operation this fake reads", p.tok.text)
		}
		op.typ = p.tok.text
		if err = p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == tokName {
			if op.name, err = p.name(); err != nil {
				return nil, err
			}
		}
		if p.tok.kind == '(' {
			vars, err := p.varDefs()
			if err != nil {
				return nil, err
			}
			op.vars = vars
		}
	}
	op.sel, err = p.selectionSet()
	return op, err
}

// varDefs reads "($a: Type = default, ...)"; the types are not checked.
func (p *parser) varDefs() ([]gqlVarDef, error) {
	var defs []gqlVarDef
	if err := p.expect('('); err != nil {
		return nil, err
	}
	for p.tok.kind != ')' {
		if err := p.expect('$'); err != nil {
			return nil, err
		}
		n, err := p.name()
		if err == nil {
			err = p.expect(':')
		}
		if err == nil {
			err = p.typeRef()
		}
		if err != nil {
			return nil, err
		}
		d := gqlVarDef{name: n}
		if p.tok.kind == '=' {
			if err := p.advance(); err != nil {
				return nil, err
			}
			if d.def, err = p.value(); err != nil {
				return nil, err
			}
			d.hasDef = true
		}
		defs = append(defs, d)
	}
	return defs, p.advance()
}

// typeRef reads a type: Name, [Type], either followed by "!".
func (p *parser) typeRef() error {
	var err error
	if p.tok.kind == '[' {
		err = p.advance()
		if err == nil {
			err = p.typeRef()
		}
		if err == nil {
			err = p.expect(']')
		}
	} else {
		_, err = p.name()
	}
	if err == nil && p.tok.kind == '!' {
		err = p.advance()
	}
	return err
}

func (p *parser) selectionSet() ([]*gqlSel, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, p.lx.errorf(p.tok, "nested too deep")
	}
	defer func() { p.depth-- }()
	if err := p.expect('{'); err != nil {
		return nil, err
	}
	var sels []*gqlSel
	for p.tok.kind != '}' {
		s, err := p.selection()
		if err != nil {
			return nil, err
		}
		sels = append(sels, s)
	}
	if len(sels) == 0 {
		return nil, p.lx.errorf(p.tok, "empty selection")
	}
	return sels, p.advance()
}

func (p *parser) selection() (*gqlSel, error) {
	s := &gqlSel{line: p.tok.line, col: p.tok.col}
	var err error
	if p.tok.kind == tokSpread {
		s.frag = true
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.kind == tokName {
			if p.tok.text != "on" {
				return nil, p.lx.errorf(p.tok, "named fragments are not read here")
			}
			err = p.advance()
			if err == nil {
				s.on, err = p.name()
			}
		}
		if err == nil {
			s.sel, err = p.selectionSet()
		}
		return s, err
	}
	if s.name, err = p.name(); err != nil {
		return nil, err
	}
	if p.tok.kind == ':' {
		s.alias = s.name
		err = p.advance()
		if err == nil {
			s.name, err = p.name()
		}
	}
	if err == nil && p.tok.kind == '(' {
		s.args, err = p.arguments()
	}
	if err == nil && p.tok.kind == '@' {
		err = p.lx.errorf(p.tok, "directives are not read here")
	}
	if err == nil && p.tok.kind == '{' {
		s.sel, err = p.selectionSet()
	}
	return s, err
}

// arguments reads "(name: value, ...)".
func (p *parser) arguments() (map[string]any, error) {
	args := map[string]any{}
	if err := p.expect('('); err != nil {
		return nil, err
	}
	for p.tok.kind != ')' {
		n, err := p.name()
		if err == nil {
			err = p.expect(':')
		}
		if err == nil {
			args[n], err = p.value()
		}
		if err != nil {
			return nil, err
		}
	}
	return args, p.advance()
}

// value reads a value: a variable (gqlVar), a string, a number (float64 or int64),
// true, false, null, an enum (its name, as a string), a list or an object.
func (p *parser) value() (any, error) {
	if p.depth++; p.depth > maxDepth {
		return nil, p.lx.errorf(p.tok, "nested too deep")
	}
	defer func() { p.depth-- }()
	t := p.tok
	switch t.kind {
	case '$':
		if err := p.advance(); err != nil {
			return nil, err
		}
		n, err := p.name()
		return gqlVar(n), err
	case '[':
		return p.list()
	case '{':
		return p.object()
	case tokString:
		return t.text, p.advance()
	case tokNumber:
		return number(p, t)
	case tokName:
		v := map[string]any{"true": true, "false": false, "null": nil}
		out, ok := v[t.text]
		if !ok {
			out = t.text // an enum value
		}
		return out, p.advance()
	}
	return nil, p.lx.errorf(t, "expected a value, found %q", t.text)
}

func number(p *parser, t token) (any, error) {
	if !strings.ContainsAny(t.text, ".eE") {
		if n, err := strconv.ParseInt(t.text, 10, 64); err == nil {
			return n, p.advance()
		}
	}
	f, err := strconv.ParseFloat(t.text, 64)
	if err != nil {
		return nil, p.lx.errorf(t, "bad number %q", t.text)
	}
	return f, p.advance()
}

func (p *parser) list() (any, error) {
	out := []any{}
	if err := p.advance(); err != nil {
		return nil, err
	}
	for p.tok.kind != ']' {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, p.advance()
}

func (p *parser) object() (any, error) {
	out := map[string]any{}
	if err := p.advance(); err != nil {
		return nil, err
	}
	for p.tok.kind != '}' {
		n, err := p.name()
		if err == nil {
			err = p.expect(':')
		}
		if err == nil {
			out[n], err = p.value()
		}
		if err != nil {
			return nil, err
		}
	}
	return out, p.advance()
}
