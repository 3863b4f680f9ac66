package forgeapi

import (
	"fmt"
	"sort"
	"strings"
)

// entry is one line of a tree: mode ("100644", "100755", "120000", "040000",
// "160000"), type and object id.
type entry struct {
	Mode, Type, OID string
}

// Modes the forges write, with the object type each names.
var modeTypes = map[string]string{
	"100644": "blob", "100755": "blob", "120000": "blob", "040000": "tree", "160000": "commit",
}

// pathError is a change a tree cannot take: a path that is not a clean relative path,
// or that goes through a file.
type pathError struct {
	Path, Reason string
}

func (e *pathError) Error() string { return fmt.Sprintf("path %q: %s", e.Path, e.Reason) }

// treeEdit changes a tree of the repository path by path, then writes the trees it
// changed (git mktree), bottom up. Directories that end up empty are dropped, as
// git's index drops them.
type treeEdit struct {
	r    *repo
	root *dirNode
}

// dirNode is one directory: its tree as read (oid, "" for a new one) and, once
// loaded, its entries with the subdirectories being changed.
type dirNode struct {
	oid     string
	loaded  bool
	dirty   bool
	entries map[string]entry
	subdirs map[string]*dirNode
}

func newTreeEdit(r *repo, base string) *treeEdit {
	return &treeEdit{r: r, root: &dirNode{oid: base}}
}

func (t *treeEdit) load(n *dirNode) error {
	if n.loaded {
		return nil
	}
	n.loaded, n.entries, n.subdirs = true, map[string]entry{}, map[string]*dirNode{}
	if n.oid == "" {
		return nil
	}
	out, err := t.r.run(nil, nil, "ls-tree", "-z", n.oid)
	if err != nil {
		return err
	}
	for _, line := range strings.Split(out, "\x00") {
		meta, name, ok := strings.Cut(line, "\t")
		if f := strings.Fields(meta); ok && len(f) == 3 {
			n.entries[name] = entry{Mode: f[0], Type: f[1], OID: f[2]}
		}
	}
	return nil
}

// splitPath checks path and splits it into its directories and its name.
func splitPath(path string) (dirs []string, name string, err error) {
	parts := strings.Split(path, "/")
	for _, p := range parts {
		if p == "" || p == "." || p == ".." || p == ".git" || strings.ContainsRune(p, 0) {
			return nil, "", &pathError{path, "not a clean relative path"}
		}
	}
	return parts[:len(parts)-1], parts[len(parts)-1], nil
}

// dir is the chain of nodes from the root to the directory dirs, made where missing
// with create; nil when it is not there (or goes through a file) and create is not
// set.
func (t *treeEdit) dir(path string, dirs []string, create bool) ([]*dirNode, error) {
	chain := []*dirNode{t.root}
	for _, d := range dirs {
		n := chain[len(chain)-1]
		if err := t.load(n); err != nil {
			return nil, err
		}
		sub := n.subdirs[d]
		if sub == nil {
			e, ok := n.entries[d]
			switch {
			case ok && e.Type != "tree" && create:
				return nil, &pathError{path, "a parent directory is a file"}
			case !ok && !create, ok && e.Type != "tree":
				return nil, nil
			}
			sub = &dirNode{oid: e.OID}
			n.subdirs[d] = sub
		}
		chain = append(chain, sub)
	}
	return chain, t.load(chain[len(chain)-1])
}

// get is the entry at path.
func (t *treeEdit) get(path string) (entry, bool, error) {
	dirs, name, err := splitPath(path)
	if err != nil {
		return entry{}, false, err
	}
	chain, err := t.dir(path, dirs, false)
	if chain == nil || err != nil {
		return entry{}, false, err
	}
	n := chain[len(chain)-1]
	if sub := n.subdirs[name]; sub != nil {
		return entry{Mode: "040000", Type: "tree", OID: sub.oid}, true, nil
	}
	e, ok := n.entries[name]
	return e, ok, nil
}

// set puts e at path, replacing what was there (a directory too).
func (t *treeEdit) set(path string, e entry) error {
	dirs, name, err := splitPath(path)
	if err != nil {
		return err
	}
	chain, err := t.dir(path, dirs, true)
	if err != nil {
		return err
	}
	n := chain[len(chain)-1]
	delete(n.subdirs, name)
	n.entries[name] = e
	markDirty(chain)
	return nil
}

// remove deletes path (a file or a whole directory) and reports whether it was there.
func (t *treeEdit) remove(path string) (bool, error) {
	dirs, name, err := splitPath(path)
	if err != nil {
		return false, err
	}
	chain, err := t.dir(path, dirs, false)
	if chain == nil || err != nil {
		return false, err
	}
	n := chain[len(chain)-1]
	_, had := n.entries[name]
	if _, sub := n.subdirs[name]; sub {
		had = true
	}
	delete(n.entries, name)
	delete(n.subdirs, name)
	if had {
		markDirty(chain)
	}
	return had, nil
}

func markDirty(chain []*dirNode) {
	for _, n := range chain {
		n.dirty = true
	}
}

// write writes every changed tree and returns the root's id.
func (t *treeEdit) write() (string, error) {
	oid, err := t.writeNode(t.root)
	if err == nil && oid == "" {
		oid, err = t.r.run(nil, nil, "mktree", "-z") // the empty tree
	}
	return oid, err
}

// writeNode writes n if it changed and returns its id, "" when it is empty.
func (t *treeEdit) writeNode(n *dirNode) (string, error) {
	if !n.dirty {
		return n.oid, nil
	}
	for name, sub := range n.subdirs {
		oid, err := t.writeNode(sub)
		if err != nil {
			return "", err
		}
		delete(n.entries, name)
		if oid != "" {
			n.entries[name] = entry{Mode: "040000", Type: "tree", OID: oid}
		}
	}
	n.subdirs, n.dirty = map[string]*dirNode{}, false
	if len(n.entries) == 0 {
		n.oid = ""
		return "", nil
	}
	var in strings.Builder
	for _, name := range sortedNames(n.entries) {
		e := n.entries[name]
		fmt.Fprintf(&in, "%s %s %s\t%s\x00", e.Mode, e.Type, e.OID, name)
	}
	oid, err := t.r.run([]byte(in.String()), nil, "mktree", "-z")
	n.oid = oid
	return oid, err
}

func sortedNames(entries map[string]entry) []string {
	names := make([]string, 0, len(entries))
	for name := range entries {
		names = append(names, name)
	}
	sort.Strings(names) // mktree sorts too; a fixed order keeps its input stable
	return names
}

// list is the entries of the root tree as written, sorted by name.
func (t *treeEdit) list() ([]string, map[string]entry, error) {
	fresh := &dirNode{oid: t.root.oid}
	if err := t.load(fresh); err != nil {
		return nil, nil, err
	}
	return sortedNames(fresh.entries), fresh.entries, nil
}
