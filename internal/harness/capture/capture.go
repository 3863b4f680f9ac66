// Package capture reads the captures of real git runs that refretry's classifiers are
// checked against (testdata/stderr, testdata/fetch, made by scripts/capture-*.sh): a
// txtar file whose comment holds "key: value" header lines and whose stdout and stderr
// sections hold git's output byte for byte. txtar ends every section with a newline;
// the header says when git did not ("stdout-no-final-newline: true").
package capture

import (
	"bytes"

	"github.com/rogpeppe/go-internal/txtar"
)

// Capture is one captured git run.
type Capture struct {
	Meta           map[string]string // the header: command, git, backend, exit, class, …
	Stdout, Stderr []byte
	HasStderr      bool // the file has a stderr section
}

// Read reads the capture at path.
func Read(path string) (Capture, error) {
	ar, err := txtar.ParseFile(path)
	if err != nil {
		return Capture{}, err
	}
	c := Capture{Meta: map[string]string{}}
	for line := range bytes.Lines(ar.Comment) {
		if k, v, ok := bytes.Cut(bytes.TrimSuffix(line, []byte("\n")), []byte(": ")); ok {
			c.Meta[string(k)] = string(v)
		}
	}
	for _, f := range ar.Files {
		switch f.Name {
		case "stdout":
			c.Stdout = f.Data
		case "stderr":
			c.Stderr, c.HasStderr = f.Data, true
		}
	}
	if c.Meta["stdout-no-final-newline"] == "true" {
		c.Stdout = bytes.TrimSuffix(c.Stdout, []byte("\n"))
	}
	if c.Meta["stderr-no-final-newline"] == "true" {
		c.Stderr = bytes.TrimSuffix(c.Stderr, []byte("\n"))
	}
	return c, nil
}
