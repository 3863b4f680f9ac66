package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// repo is a scratch repository with a single commit.
type repo struct {
	dir string
	oid string
}

// newRepo creates a repository with the given ref storage format under
// root and commits one empty commit. The fixed identity and dates in the
// environment make the commit id the same every time.
func newRepo(r *runner, root, format string) (repo, error) {
	dir, err := os.MkdirTemp(root, format+"-")
	if err != nil {
		return repo{}, err
	}
	git := r.git
	steps := [][]string{
		{git, "init", "--quiet", "--ref-format=" + format, "--initial-branch=main", dir},
		{git, "-C", dir, "commit", "--quiet", "--allow-empty", "--no-verify", "-m", "refretry bench"},
	}
	for _, argv := range steps {
		if _, err := r.output(root, argv...); err != nil {
			return repo{}, errors.Join(err, os.RemoveAll(dir))
		}
	}
	oid, err := r.output(dir, r.git, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return repo{}, errors.Join(err, os.RemoveAll(dir))
	}
	return repo{dir: dir, oid: strings.TrimSpace(oid)}, nil
}

func (rp repo) remove() error { return os.RemoveAll(rp.dir) }

// eachRef calls fn with the name and object id of every ref under prefix
// (which must end in a slash).
func eachRef(r *runner, rp repo, prefix string, fn func(name, oid string)) error {
	argv := []string{r.git, "for-each-ref", "--format=%(refname) %(objectname)", prefix}
	var bad string
	err := r.lines(rp.dir, argv, func(line string) {
		name, oid, ok := strings.Cut(line, " ")
		if !ok && bad == "" {
			bad = line
		}
		fn(name, oid)
	})
	if err == nil && bad != "" {
		err = fmt.Errorf("unexpected for-each-ref line %q", bad)
	}
	return err
}

// refMap returns every ref under prefix with its object id.
func refMap(r *runner, rp repo, prefix string) (map[string]string, error) {
	refs := make(map[string]string)
	err := eachRef(r, rp, prefix, func(name, oid string) { refs[name] = oid })
	return refs, err
}

// writeBatchFile writes the --stdin input that creates n refs at oid.
func writeBatchFile(dir string, n int, oid string) (path string, err error) {
	path = filepath.Join(dir, fmt.Sprintf("batch-%d.txt", n))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		if _, err := fmt.Fprintf(w, "create %s %s\n", batchRef(i), oid); err != nil {
			return "", err
		}
	}
	return path, w.Flush()
}

func writerRef(i int) string { return fmt.Sprintf("refs/heads/w/%d", i) }
func batchRef(i int) string  { return fmt.Sprintf("refs/heads/b/%d", i) }
