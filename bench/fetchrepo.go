package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// fetchBranches is how many branches the remote has. Every fetch of the
// phase finds all of them moved, so it must update as many
// remote-tracking refs.
const fetchBranches = 20

// fastImportCommitter is the hermetic identity and date (internal/harness/hermetic),
// so the fixture's commit ids are the same in every run.
const fastImportCommitter = "C O Mitter <committer@example.com> 1700000000 +0000"

// fetchCombo is one ref backend with one git: the remote and the clone are
// made with it and the fetches run it.
type fetchCombo struct {
	name      string // short and stable, for directory names and chart styles
	format    string // ref storage format of the remote and the clone
	git       string
	version   string // as git reports it: "2.55.0"
	label     string // for the tables: "reftable, git 2.55.0"
	refFormat bool   // whether this git knows --ref-format (2.45 and later)
	skip      string // why the combination cannot run here; empty when it can
}

// formatArgs are the arguments that choose the ref format at init and
// clone; a git older than --ref-format only knows files.
func (c fetchCombo) formatArgs() []string {
	if !c.refFormat {
		return nil
	}
	return []string{"--ref-format=" + c.format}
}

// fetchTransport is one way the clone reaches the remote.
type fetchTransport struct {
	name  string                   // short and stable: "file", "http"
	label string                   // for the tables
	url   func(repo string) string // repo is a directory name under the served root
}

// fetchFixture is one combination's remote and clones, made once with git
// and copied afresh for every trial: the remote with every branch moved
// on, and per transport a clone made before they moved.
type fetchFixture struct {
	combo    fetchCombo
	remote   string            // where the remote lives in a trial, under the served root
	template string            // the remote as made, copied to remote
	clones   map[string]string // by transport name: the clone as made
	want     map[string]string // refs/remotes/origin/bK to the remote's bK
}

// newFetchFixture makes the remote (bare, branches b0..b19 at one commit
// each, HEAD at b0), clones it over every transport, then moves every
// branch to a child commit. served is the directory the HTTP server serves
// and file:// URLs point into; templates holds what is copied per trial.
func newFetchFixture(r *runner, c fetchCombo, transports []fetchTransport, served, templates string) (*fetchFixture, error) {
	repo := c.name + ".git"
	fx := &fetchFixture{
		combo:    c,
		remote:   filepath.Join(served, repo),
		template: filepath.Join(templates, c.name+"-remote.git"),
		clones:   make(map[string]string),
	}
	initArgv := append([]string{r.git, "init", "--quiet", "--bare", "--initial-branch=b0"}, c.formatArgs()...)
	if _, err := r.output(served, append(initArgv, fx.remote)...); err != nil {
		return nil, err
	}
	if _, err := r.outputStdin(fx.remote, strings.NewReader(branchStream("old", false)), r.git, "fast-import", "--quiet"); err != nil {
		return nil, err
	}
	for _, t := range transports {
		dir := filepath.Join(templates, c.name+"-"+t.name)
		// A fetch starts `git maintenance run --auto`, which git 2.55
		// detaches: a process nobody waits for, whose CPU time wait4
		// cannot see and which may still run when the trial is checked.
		// In the foreground it is a child the fetch waits for, as git
		// 2.39 runs it.
		clone := append([]string{r.git, "clone", "--quiet", "-c", "maintenance.autoDetach=false"}, c.formatArgs()...)
		if _, err := r.output(templates, append(clone, t.url(repo), dir)...); err != nil {
			return nil, err
		}
		fx.clones[t.name] = dir
	}
	if _, err := r.outputStdin(fx.remote, strings.NewReader(branchStream("new", true)), r.git, "fast-import", "--quiet"); err != nil {
		return nil, err
	}
	if err := fx.readWant(r); err != nil {
		return nil, err
	}
	for name, dir := range fx.clones {
		if n, err := fx.mismatches(r, dir); err != nil {
			return nil, err
		} else if n != fetchBranches {
			return nil, fmt.Errorf("the %s clone has %d of %d remote-tracking refs at the remote's branches before any fetch", name, fetchBranches-n, fetchBranches)
		}
	}
	return fx, os.Rename(fx.remote, fx.template)
}

// readWant records the remote's branches as the remote-tracking refs a
// fetch must leave.
func (fx *fetchFixture) readWant(r *runner) error {
	fx.want = make(map[string]string)
	if err := eachRef(r, repo{dir: fx.remote}, "refs/heads/", func(name, oid string) {
		fx.want["refs/remotes/origin/"+strings.TrimPrefix(name, "refs/heads/")] = oid
	}); err != nil {
		return err
	}
	if len(fx.want) != fetchBranches {
		return fmt.Errorf("the remote has %d branches, want %d", len(fx.want), fetchBranches)
	}
	return nil
}

// freshRemote puts a new copy of the remote where the clones' URLs point.
func (fx *fetchFixture) freshRemote() error {
	return copyTree(fx.template, fx.remote)
}

// freshClone puts a new copy of the clone made over the transport at dst.
func (fx *fetchFixture) freshClone(transport, dst string) error {
	return copyTree(fx.clones[transport], dst)
}

// mismatches counts the remote's branches whose remote-tracking ref in
// the clone at dir is missing or elsewhere.
func (fx *fetchFixture) mismatches(r *runner, dir string) (int, error) {
	got, err := refMap(r, repo{dir: dir}, "refs/remotes/origin/")
	if err != nil {
		return 0, err
	}
	n := 0
	for ref, oid := range fx.want {
		if got[ref] != oid {
			n++
		}
	}
	return n, nil
}

// copyTree replaces dst with a copy of the directory src (regular files
// and directories only, as a repository just made by git has).
func copyTree(src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		return errors.Join(fmt.Errorf("copying %s: %w", src, err), os.RemoveAll(dst))
	}
	return nil
}

// branchStream is git fast-import input that commits one empty commit to
// each branch b0..b19, with message "<gen> <k>": on top of the branch's
// tip when onTip is true, else as a root commit.
func branchStream(gen string, onTip bool) string {
	var b strings.Builder
	for k := range fetchBranches {
		msg := fmt.Sprintf("%s %d\n", gen, k)
		fmt.Fprintf(&b, "commit refs/heads/b%d\ncommitter %s\ndata %d\n%s", k, fastImportCommitter, len(msg), msg)
		if onTip {
			fmt.Fprintf(&b, "from refs/heads/b%d^0\n", k)
		}
		b.WriteString("\n")
	}
	return b.String()
}
