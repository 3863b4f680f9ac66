package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/buildinfo"
	"github.com/refretry/refretry/internal/gitexec"
)

// VersionCmd prints refretry's version (stamped by the linker, or from the build
// information: internal/buildinfo) and the git it would run.
type VersionCmd struct{}

// Run prints the version, the commit, the date and the git.
func (VersionCmd) Run(in *invocation) error {
	if err := in.check(); err != nil {
		return err
	}
	bi := buildinfo.Read()
	commit := orUnknown(bi.Commit)
	if bi.Modified {
		commit += " (modified)"
	}
	_, err := fmt.Fprintf(in.s.Stdout, "refretry version %s\ncommit: %s\ndate: %s\ngit: %s\n",
		bi.Version, commit, orUnknown(bi.Date), describeGit(in.ctx, in.git(), in.env))
	return err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// describeGit is the git refretry would run, resolved as gitexec resolves it (a name
// without a separator is looked up on PATH), and the first line of its `git version`.
func describeGit(ctx context.Context, git string, env []string) string {
	path := git
	if !strings.ContainsRune(git, os.PathSeparator) {
		p, err := exec.LookPath(git)
		if err != nil {
			return git + ": not found"
		}
		path = p
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := gitexec.Command(ctx, path, nil, env, "version").Output()
	if errors.Is(err, fs.ErrNotExist) {
		return path + ": not found"
	}
	if err != nil {
		return path + ": " + err.Error()
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return path + " (" + line + ")"
}
