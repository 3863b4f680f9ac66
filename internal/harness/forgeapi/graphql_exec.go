package forgeapi

import "fmt"

// gqlObject is an object an operation selects from: its type's name and its fields,
// each a value (a scalar, *gqlObject, []*gqlObject) or a resolver, called with the
// field's arguments only when the field is selected.
type gqlObject struct {
	typ    string
	fields map[string]any
}

type resolver func(args map[string]any) (any, *gqlError)

// gqlError is one entry of an answer's errors, in GitHub's shape.
type gqlError struct {
	Type      string   `json:"type,omitempty"`
	Path      []any    `json:"path,omitempty"`
	Locations []gqlLoc `json:"locations,omitempty"`
	Message   string   `json:"message"`
}

type gqlLoc struct {
	Line   int `json:"line"`
	Column int `json:"column"`
}

// executor runs one operation.
type executor struct {
	vars map[string]any
	errs []*gqlError
}

// execute runs op on root with the request's variables (defaults filled in) and
// returns the answer's data and errors.
func execute(op *gqlOp, vars map[string]any, root *gqlObject) (map[string]any, []*gqlError) {
	x := &executor{vars: map[string]any{}}
	for _, d := range op.vars {
		if v, ok := vars[d.name]; ok {
			x.vars[d.name] = v
		} else if d.hasDef {
			x.vars[d.name] = d.def
		}
	}
	data := x.object(root, op.sel, nil)
	return data, x.errs
}

func (x *executor) fail(s *gqlSel, path []any, e *gqlError) {
	e.Path, e.Locations = path, []gqlLoc{{s.line, s.col}}
	x.errs = append(x.errs, e)
}

func (x *executor) object(o *gqlObject, sels []*gqlSel, path []any) map[string]any {
	out := map[string]any{}
	for _, s := range sels {
		if s.frag {
			if s.on == "" || s.on == o.typ {
				for k, v := range x.object(o, s.sel, path) {
					out[k] = v
				}
			}
			continue
		}
		out[s.key()] = x.field(o, s, append(path[:len(path):len(path)], s.key()))
	}
	return out
}

func (x *executor) field(o *gqlObject, s *gqlSel, path []any) any {
	if s.name == "__typename" {
		return o.typ
	}
	v, ok := o.fields[s.name]
	if !ok {
		x.fail(s, path, &gqlError{Message: fmt.Sprintf("Field '%s' doesn't exist on type '%s'", s.name, o.typ)})
		return nil
	}
	if r, ok := v.(resolver); ok {
		args, _ := x.substitute(s.args).(map[string]any)
		var err *gqlError
		if v, err = r(args); err != nil {
			x.fail(s, path, err)
			return nil
		}
	}
	return x.value(v, s, path)
}

func (x *executor) value(v any, s *gqlSel, path []any) any {
	switch v := v.(type) {
	case *gqlObject:
		if v == nil {
			return nil
		}
		if s.sel == nil {
			x.fail(s, path, &gqlError{Message: fmt.Sprintf("Field must have selections (field '%s' returns %s but has no selections)", s.name, v.typ)})
			return nil
		}
		return x.object(v, s.sel, path)
	case []*gqlObject:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = x.value(e, s, append(path[:len(path):len(path)], i))
		}
		return out
	}
	if s.sel != nil {
		x.fail(s, path, &gqlError{Message: fmt.Sprintf("Selections can't be made on scalars (field '%s')", s.name)})
		return nil
	}
	return v
}

// substitute is v with its variables replaced by their values.
func (x *executor) substitute(v any) any {
	switch v := v.(type) {
	case gqlVar:
		return x.vars[string(v)]
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = x.substitute(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = x.substitute(e)
		}
		return out
	}
	return v
}
