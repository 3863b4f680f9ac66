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

	"github.com/alecthomas/kong"
)

var update = flag.Bool("update", false, "rewrite README.md's option tables from Options and PushOptions")

// readmeTables are README.md's option tables: each lies between its start and end
// lines, and lists the options of cmd (refretry's own, push's).
var readmeTables = []struct{ start, end, cmd string }{
	{"<!-- options: generated from internal/cli/options.go; go test ./internal/cli -run TestREADMEOptions -update -->\n", "<!-- end of options -->\n", ""},
	{"<!-- push options: generated from internal/cli/options.go; go test ./internal/cli -run TestREADMEOptions -update -->\n", "<!-- end of push options -->\n", "push"},
}

// TestREADMEOptions: README.md's option tables are Options and PushOptions rendered,
// as --help says them; -update rewrites them.
func TestREADMEOptions(t *testing.T) {
	path := filepath.Join("..", "..", "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rewritten := readme
	for _, table := range readmeTables {
		before, rest, ok1 := bytes.Cut(rewritten, []byte(table.start))
		got, after, ok2 := bytes.Cut(rest, []byte(table.end))
		if !ok1 || !ok2 {
			t.Fatalf("README.md has no %q … %q", table.start, table.end)
		}
		want := optionsMarkdown(table.cmd)
		if string(got) == want {
			continue
		}
		if !*update {
			t.Errorf("README.md's option table %q is not the declaration's (go test ./internal/cli -run TestREADMEOptions -update rewrites it):\n%s",
				table.start, lineDiff(string(got), want))
		}
		rewritten = bytes.Join([][]byte{before, []byte(table.start), []byte(want), []byte(table.end), after}, nil)
	}
	if *update && !bytes.Equal(rewritten, readme) {
		if err := os.WriteFile(path, rewritten, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPushDocUsage: docs/push.md opens with push's usage lines as --help prints them.
func TestPushDocUsage(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "push.md"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	text := usage(grammar(nil).Model.Node)
	for l := range strings.Lines(text) {
		l = strings.TrimSpace(strings.TrimPrefix(l, "Usage:"))
		if !strings.HasPrefix(l, "refretry [options] push") {
			continue
		}
		n++
		if !bytes.Contains(doc, []byte("\n"+l+"\n")) {
			t.Errorf("docs/push.md lacks the usage line\n%s", l)
		}
	}
	if n != 3 {
		t.Errorf("the usage has %d push lines, want 3:\n%s", n, text)
	}
}

// optionsMarkdown is cmd's option table: one row per option, in declaration order.
// push's options have no environment variable or git config key: their table has no
// such columns.
func optionsMarkdown(cmd string) string {
	root := grammar(nil).Model.Node
	var b strings.Builder
	flags := root.Flags[1:] // --help is kong's
	if cmd == "" {
		b.WriteString("| option | environment | git config | default | meaning |\n|---|---|---|---|---|\n")
	} else {
		b.WriteString("| option | default | meaning |\n|---|---|---|\n")
		flags = commandNode(root, cmd).Flags
	}
	for _, f := range flags {
		env, config, unset, def := about(f.Value)
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
		help := strings.ReplaceAll(f.Help, "<", "&lt;") // <branch> is words, not HTML
		if cmd != "" {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", spellings(f), unset, help)
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", spellings(f), env, config, unset, help)
	}
	return b.String()
}

// spellings are the option's spellings, with its value's placeholder: `-C <path>`,
// `--directory <path>`.
func spellings(f *kong.Flag) string {
	value := ""
	if p := f.PlaceHolder; p != "" {
		value = " <" + strings.ToLower(p) + ">"
	}
	var s []string
	if f.Short != 0 {
		s = append(s, "`-"+string(f.Short)+value+"`")
	}
	return strings.Join(append(s, "`--"+f.Name+value+"`"), ", ")
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
