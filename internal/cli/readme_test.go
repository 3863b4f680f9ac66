package cli

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite README.md's option table from Options")

// The option table in README.md lies between these lines.
const (
	tableStart = "<!-- options: generated from internal/cli/options.go; go test ./internal/cli -run TestREADMEOptions -update -->\n"
	tableEnd   = "<!-- end of options -->\n"
)

// TestREADMEOptions: README.md's option table is Options rendered, as --help says
// them; -update rewrites it.
func TestREADMEOptions(t *testing.T) {
	path := filepath.Join("..", "..", "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := bytes.Cut(readme, []byte(tableStart))
	got, after, ok2 := bytes.Cut(rest, []byte(tableEnd))
	if !ok1 || !ok2 {
		t.Fatalf("README.md has no %q … %q", tableStart, tableEnd)
	}
	want := optionsMarkdown()
	if string(got) == want {
		return
	}
	if *update {
		out := bytes.Join([][]byte{before, []byte(tableStart), []byte(want), []byte(tableEnd), after}, nil)
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's option table is not Options' (go test ./internal/cli -run TestREADMEOptions -update rewrites it):\n%s",
		lineDiff(string(got), want))
}

// optionsMarkdown is the option table: one row per option, in declaration order.
func optionsMarkdown() string {
	var b strings.Builder
	b.WriteString("| option | environment | git config | default | meaning |\n|---|---|---|---|---|\n")
	for _, o := range optionTable() {
		env, config, unset, def := o.about()
		switch {
		case env != "" && config == "":
			config = "(not read)"
		case config != "":
			config = "`" + config + "`"
		}
		if env != "" {
			env = "`" + env + "`"
		}
		if def != "" {
			unset = "`" + def + "`"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", spellings(o), env, config, unset, o.tag.Get("help"))
	}
	return b.String()
}

// spellings are the option's spellings, with its value's placeholder: `-C <path>`,
// `--directory <path>`.
func spellings(o option) string {
	value := ""
	if p := o.tag.Get("placeholder"); p != "" {
		value = " <" + strings.ToLower(p) + ">"
	}
	var s []string
	for _, name := range []string{o.short, o.name} {
		if name != "" {
			s = append(s, "`"+name+value+"`")
		}
	}
	return strings.Join(s, ", ")
}

// lineDiff is the lines of got that want lacks (-) and of want that got lacks (+).
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for _, l := range g {
		if !slices.Contains(w, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, l := range w {
		if !slices.Contains(g, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	return b.String()
}
