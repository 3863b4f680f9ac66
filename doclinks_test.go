package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/diff"
)

// TestDocLinks: every doc link in a public package's docs names something that
// exists, so that a rename cannot leave a dead link behind (go doc prints a dead
// link as plain "[Name]", and TestAPI's golden file would freeze it). The docs read
// are the package comments and the comments of every exported declaration, of its
// fields and of its interface methods. A link is [Name] (a declaration of the
// package), [Type.Method] or [Type.Field], [pkg], [pkg.Name] or [pkg.Type.Method]
// (pkg imported by the package, the package itself, or a one-word standard package,
// as go/doc resolves them), or a full import path; bracketed text in double quotes
// is a quotation, not a link. A mention of a package of this module in prose
// ("internal/lockfile") must name a package that exists too.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	l := newDocLoader(t)
	pkgs := publicPackages(t, l.goBin)
	if len(pkgs) == 0 {
		t.Fatal("go list found no public package")
	}
	links := 0
	for _, rel := range pkgs {
		n, broken := l.check(t, "./"+rel)
		links += n
		for _, b := range broken {
			t.Error(b)
		}
	}
	// The check must have had something to check: the public packages link to one
	// another and to their own declarations.
	if links == 0 {
		t.Fatal("found no doc link in any public package; is the parser reading the docs?")
	}
	t.Logf("%d doc links in %d public packages", links, len(pkgs))
}

// TestDocLinksBroken: the check finds each kind of dead link, at its line, and takes
// each kind of live one, in a package made for it (testdata/doclinks/bad).
func TestDocLinksBroken(t *testing.T) {
	t.Parallel()
	l := newDocLoader(t)
	const dir = "testdata/doclinks/bad"
	const path = "github.com/refretry/refretry/" + dir
	n, got := l.check(t, "./"+dir)
	want := []string{
		dir + "/bad.go:8: [Gone]: no declaration, method or field Gone in " + path,
		dir + "/bad.go:8: [Good.Gone]: no declaration, method or field Good.Gone in " + path,
		dir + "/bad.go:8: [io.Gone]: no declaration, method or field Gone in io",
		dir + "/bad.go:9: [io.Reader.Gone]: no declaration, method or field Reader.Gone in io",
		dir + "/bad.go:9: [spool]: no package spool is imported by " + path + " (nor is it one of the standard library's one-word packages)",
		dir + "/bad.go:9: [gone.Name]: no package gone is imported by " + path + " (nor is it one of the standard library's one-word packages)",
		dir + "/bad.go:10: [github.com/refretry/refretry/gone]: no package github.com/refretry/refretry/gone (go list cannot load it)",
		dir + "/bad.go:10: [Gone]: no declaration, method or field Gone in " + path,
		dir + `/bad.go:12: "internal/gone": no package internal/gone in this module`,
		dir + "/bad.go:21: [Missing]: no declaration, method or field Missing in " + path,
		dir + "/bad.go:23: [Good.Missing]: no declaration, method or field Good.Missing in " + path,
		dir + "/bad.go:29: [Absent]: no declaration, method or field Absent in " + path,
	}
	if d := diff.Diff("want", []byte(strings.Join(want, "\n")+"\n"), "got", []byte(strings.Join(got, "\n")+"\n")); d != nil {
		t.Errorf("the dead links found in %s:\n%s", dir, d)
	}
	// Every link in the package is read, the live ones included.
	const all = 26 // 14 live and 8 dead in the package comment, 4 in the declarations'
	if n != all {
		t.Errorf("%d doc links read in %s, want %d", n, dir, all)
	}
}

// check reads the docs of the package at ./dir and returns how many doc links they
// hold and a line for each dead one or each mention of a package that is not there,
// in the order of the files, as file:line: link: why.
func (l *docLoader) check(t *testing.T, dir string) (links int, broken []string) {
	t.Helper()
	p, err := l.load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range p.docs() {
		text := g.Text()
		seen := map[string]int{} // how often each text was met in g, to name its line
		at := func(s string) string {
			seen[s]++
			return p.where(g, s, seen[s])
		}
		for _, link := range docLinks(text) {
			links++
			written := "[" + linkText(link) + "]"
			if why := l.resolve(p, link); why != "" {
				broken = append(broken, fmt.Sprintf("%s: %s: %s", at(written), written, why))
			} else {
				at(written)
			}
		}
		for _, m := range modulePathMention.FindAllStringSubmatch(text, -1) {
			if !l.modPkgs[m[1]] {
				broken = append(broken, fmt.Sprintf("%s: %q: no package %s in this module", at(m[0]), m[0], m[1]))
			}
		}
	}
	return links, broken
}

// modulePathMention is a mention of one of this module's packages in prose: an
// internal one by its path in the module, any one by its import path.
var modulePathMention = regexp.MustCompile(`(?:github\.com/refretry/refretry/)?\b(internal(?:/[a-z0-9_]+)+)`)

// quoted is bracketed text in double quotes: a quotation of git's output
// ("[rejected]"), not a link.
var quoted = regexp.MustCompile(`"\[([^\]"\n]*)\]"`)

// docLinks are the doc links in a doc comment's text, every one that go/doc would
// turn into a link if its target existed: parsed with lookups that accept every
// name a package or a declaration can have, so that a link to nothing is found
// instead of left as plain text. Quoted text is not read.
func docLinks(text string) []*comment.DocLink {
	p := &comment.Parser{
		LookupPackage: func(name string) (string, bool) { return name, token.IsIdentifier(name) },
		LookupSym:     func(recv, name string) bool { return true },
	}
	text = quoted.ReplaceAllString(text, `"($1)"`)
	var links []*comment.DocLink
	var inText func([]comment.Text)
	inText = func(ts []comment.Text) {
		for _, t := range ts {
			if l, ok := t.(*comment.DocLink); ok {
				links = append(links, l)
			}
		}
	}
	var inBlocks func([]comment.Block)
	inBlocks = func(bs []comment.Block) {
		for _, b := range bs {
			switch b := b.(type) {
			case *comment.Paragraph:
				inText(b.Text)
			case *comment.Heading:
				inText(b.Text)
			case *comment.List:
				for _, item := range b.Items {
					inBlocks(item.Content)
				}
			}
		}
	}
	inBlocks(p.Parse(text).Content)
	return links
}

// linkText is a doc link as written between its brackets.
func linkText(l *comment.DocLink) string {
	var b strings.Builder
	for _, t := range l.Text {
		if p, ok := t.(comment.Plain); ok {
			b.WriteString(string(p))
		}
	}
	return b.String()
}

// docLoader loads packages, by import path or ./dir, once each.
type docLoader struct {
	goBin   string
	modPkgs map[string]bool // the module's packages, by path in the module
	pkgs    map[string]*docPackage
}

func newDocLoader(t *testing.T) *docLoader {
	t.Helper()
	l := &docLoader{goBin: goCommand(t), modPkgs: map[string]bool{}, pkgs: map[string]*docPackage{}}
	for line := range strings.Lines(string(goOutput(t, l.goBin, "list", "-f", "{{.ImportPath}} {{.Module.Path}}", "./..."))) {
		f := strings.Fields(line)
		if len(f) != 2 {
			t.Fatalf("go list: %q", line)
		}
		if rel, ok := strings.CutPrefix(f[0], f[1]+"/"); ok {
			l.modPkgs[rel] = true
		}
	}
	return l
}

// docPackage is one package's files and go/doc's view of them.
type docPackage struct {
	path  string
	fset  *token.FileSet
	files []*ast.File
	doc   *doc.Package
}

// load is the package at an import path or a ./dir, or an error when go list
// finds none there.
func (l *docLoader) load(path string) (*docPackage, error) {
	if p, ok := l.pkgs[path]; ok {
		return p, nil
	}
	cmd := exec.Command(l.goBin, "list", "-f", "{{.ImportPath}}\n{{.Dir}}\n{{range .GoFiles}}{{.}}\n{{end}}{{range .CgoFiles}}{{.}}\n{{end}}", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		first, _, _ := strings.Cut(stderr.String(), "\n")
		return nil, fmt.Errorf("go list: %v: %s", err, first)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) < 3 {
		return nil, fmt.Errorf("go list %s: no Go files: %q", path, out)
	}
	p := &docPackage{path: lines[0], fset: token.NewFileSet()}
	dir := lines[1]
	root, err := filepath.Abs(".")
	if err != nil {
		return nil, err
	}
	for _, name := range lines[2:] {
		// Named from the module's root when inside it, so that a failure names
		// transaction/doc.go:8.
		file := filepath.Join(dir, name)
		if rel, err := filepath.Rel(root, file); err == nil && filepath.IsLocal(rel) {
			file = rel
		}
		f, err := parser.ParseFile(p.fset, file, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		p.files = append(p.files, f)
	}
	d, err := doc.NewFromFiles(p.fset, p.files, p.path, doc.PreserveAST)
	if err != nil {
		return nil, fmt.Errorf("go/doc %s: %v", p.path, err)
	}
	p.doc = d
	l.pkgs[path], l.pkgs[p.path] = p, p
	return p, nil
}

// resolve says why a doc link in p's docs names nothing, or "" when it names
// something: it is resolved as go/doc resolves it, and its target must exist.
func (l *docLoader) resolve(p *docPackage, link *comment.DocLink) string {
	parse := p.doc.Parser()
	target := p
	if pkg := link.ImportPath; pkg != "" {
		path := pkg
		if !strings.Contains(pkg, "/") {
			var ok bool
			if path, ok = parse.LookupPackage(pkg); !ok {
				if path, ok = comment.DefaultLookupPackage(pkg); !ok {
					return "no package " + pkg + " is imported by " + p.path + " (nor is it one of the standard library's one-word packages)"
				}
			}
		}
		if path != "" && path != p.path {
			var err error
			if target, err = l.load(path); err != nil {
				return "no package " + path + " (go list cannot load it)"
			}
		}
	}
	if link.Name == "" {
		return ""
	}
	sym := link.Name
	if link.Recv != "" {
		sym = link.Recv + "." + link.Name
	}
	if !target.doc.Parser().LookupSym(link.Recv, link.Name) {
		return "no declaration, method or field " + sym + " in " + target.path
	}
	return ""
}

// docs are p's package comments and the comments of its exported declarations,
// their fields and their interface methods (what go doc -all shows), in the order
// of the files.
func (p *docPackage) docs() []*ast.CommentGroup {
	var ds []*ast.CommentGroup
	add := func(gs ...*ast.CommentGroup) {
		for _, g := range gs {
			if g != nil {
				ds = append(ds, g)
			}
		}
	}
	var fields func(ast.Expr)
	fields = func(e ast.Expr) {
		var list *ast.FieldList
		switch e := e.(type) {
		case *ast.StructType:
			list = e.Fields
		case *ast.InterfaceType:
			list = e.Methods
		default:
			return
		}
		for _, f := range list.List {
			if len(f.Names) == 0 || slices.ContainsFunc(f.Names, (*ast.Ident).IsExported) {
				add(f.Doc, f.Comment)
				fields(f.Type)
			}
		}
	}
	for _, f := range p.files {
		add(f.Doc)
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || receiverExported(d.Recv)) {
					add(d.Doc)
				}
			case *ast.GenDecl:
				exported := false
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							exported = true
							add(s.Doc, s.Comment)
							fields(s.Type)
						}
					case *ast.ValueSpec:
						if slices.ContainsFunc(s.Names, (*ast.Ident).IsExported) {
							exported = true
							add(s.Doc, s.Comment)
						}
					}
				}
				if exported {
					add(d.Doc)
				}
			}
		}
	}
	slices.SortStableFunc(ds, func(a, b *ast.CommentGroup) int { return int(a.Pos() - b.Pos()) })
	return ds
}

// receiverExported: a method's receiver type is exported (T, *T, T[P]).
func receiverExported(recv *ast.FieldList) bool {
	if len(recv.List) == 0 {
		return false
	}
	e := recv.List[0].Type
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.IsExported()
		default:
			return false
		}
	}
}

// where is file:line of the line of a comment group that holds the nth occurrence
// of text (n from 1), or of the group's start when no line holds it.
func (p *docPackage) where(g *ast.CommentGroup, text string, n int) string {
	pos := p.fset.Position(g.Pos())
	for _, c := range g.List {
		for i := 0; ; {
			j := strings.Index(c.Text[i:], text)
			if j < 0 {
				break
			}
			i += j
			if n--; n == 0 {
				pos = p.fset.Position(c.Pos())
				pos.Line += strings.Count(c.Text[:i], "\n")
				return pos.Filename + ":" + strconv.Itoa(pos.Line)
			}
			i += len(text)
		}
	}
	return pos.Filename + ":" + strconv.Itoa(pos.Line)
}
