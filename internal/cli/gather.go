package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/gather"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/push"
)

// gatherArgs reads `push --gather`'s git arguments: options, <remote> and one
// [<src>:]<branch>.
func gatherArgs(rest []string) (opts []string, remote, src, branch string, err error) {
	var positional []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case a == "--":
			positional = append(positional, rest[i+1:]...)
			i = len(rest)
		case strings.HasPrefix(a, "-") && a != "-":
			opts = append(opts, a)
			if push.TakesNextArg(a) && i+1 < len(rest) {
				i++
				opts = append(opts, rest[i])
			}
		default:
			positional = append(positional, a)
		}
	}
	if len(positional) != 2 {
		return nil, "", "", "", &usageError{msg: "push --gather: takes <remote> [<src>:]<branch>, one branch"}
	}
	remote = positional[0]
	src, branch, ok := strings.Cut(strings.TrimPrefix(positional[1], "+"), ":")
	if !ok {
		src, branch = "HEAD", src
	}
	if src == "" || branch == "" || strings.HasPrefix(branch, "refs/") && !strings.HasPrefix(branch, "refs/heads/") {
		return nil, "", "", "", &usageError{msg: "push --gather: " + positional[1] + " is not [<src>:]<branch>"}
	}
	return opts, remote, src, strings.TrimPrefix(branch, "refs/heads/"), nil
}

// runGather is `refretry push --gather`: the gather, and on a conflict the fallback
// the caller asked for.
func (c *PushCmd) runGather(in *invocation, lg *report.Log, rest []string) error {
	opts, remote, src, branch, err := gatherArgs(rest)
	if err != nil {
		return err
	}
	key, err := gatherKey(in, "--gather-key-file", c.GatherKeyFile)
	if err != nil {
		return err
	}
	g := &gather.Runner{
		Git: in.git(), Dirs: in.opts.Dirs, Env: in.env, Remote: remote, Branch: branch, Source: src,
		PushOptions: opts, MaxPerWave: c.GatherMax, LeaseTimeout: c.GatherLease, Settings: in.settings,
		Key: key, MaxAge: c.GatherMaxAge, Note: lg.Note, OnAttempt: lg.Attempt,
	}
	if key == nil {
		lg.Note("gather", unauthenticated)
	}
	_, err = g.Run(in.ctx, lg.Stderr())
	var conflict *gather.ConflictError
	if errors.As(err, &conflict) && (c.Rebase || c.Regenerate != "") {
		lg.Note("gather", err.Error()+"; pushing it with "+map[bool]string{true: "--rebase", false: "--regenerate"}[c.Rebase]+" instead")
		p := &push.Runner{
			Git: in.git(), Dirs: in.opts.Dirs, Env: in.env,
			Rebase: c.Rebase, Regenerate: c.Regenerate, Settings: in.settings, OnAttempt: lg.Attempt, Note: lg.Note,
		}
		res, err := p.Run(in.ctx, append(append(opts, remote), src+":refs/heads/"+branch), nil, in.s.Stdout, lg.Stderr())
		lg.Finish(res.ExitCode, err, func() report.Refs { return pushRefs(res.Report.Refs, err) })
		if res.ExitCode != 0 {
			return exitError(res.ExitCode)
		}
		return nil
	}
	code := gatherExit(err)
	lg.Finish(code, err, func() report.Refs { return report.Refs{Updates: 1, Names: []string{"refs/heads/" + branch}} })
	if code != 0 {
		return exitError(code)
	}
	return nil
}

// gatherExit is the exit code of a gather that ended with err: git's own when a push
// failed for good (the staging push, a wave the remote refused), 127 when git could
// not be started, else 1 (the commit did not land: a conflict, a budget that ended).
func gatherExit(err error) int {
	var f *failure.Error
	switch {
	case err == nil:
		return 0
	case errors.Is(err, failure.ErrGitNotFound):
		return report.ExitGitMissing
	case errors.As(err, &f) && f.ExitCode != 0:
		return f.ExitCode
	}
	return 1
}

// GatherCmd looks after what `push --gather` staged on a remote.
type GatherCmd struct {
	List    GatherListCmd    `cmd:"" help:"List the commits staged for a branch (and those that conflicted or were discarded), oldest first."`
	Land    GatherLandCmd    `cmd:"" help:"Gather every staged commit onto the branch, as a fan-in job or after an outage (no commit of its own)."`
	Discard GatherDiscardCmd `cmd:"" help:"Remove staged commits by id; a job still waiting for one fails instead of waiting on."`
}

// gatherTarget is the remote and branch every gather command takes, and the key
// that tells which staged commits the pipeline's jobs made.
type gatherTarget struct {
	Remote  string        `arg:"" help:"The remote: a name or a URL."`
	Branch  string        `arg:"" help:"The branch the commits are staged for."`
	KeyFile string        `name:"key-file" help:"Read the gather key from this file instead of REFRETRY_GATHER_KEY." placeholder:"FILE"`
	MaxAge  time.Duration `name:"max-age" help:"With a gather key: how old a staged commit may be and still land." default:"168h" placeholder:"DURATION"`
}

// unauthenticated is the note of a gather without a key.
const unauthenticated = "no gather key (REFRETRY_GATHER_KEY): this gather lands whatever anyone who may push " +
	"refs/refretry/* to the remote staged (docs/security.md)"

// gatherKey is the gather key: REFRETRY_GATHER_KEY, or the content of file (given as
// option; its trailing newline dropped); nil when neither is set. A key given both
// ways, a file that cannot be read or a key too short is a usage error.
func gatherKey(in *invocation, option, file string) ([]byte, error) {
	env := in.getenv("REFRETRY_GATHER_KEY")
	var key []byte
	from := "REFRETRY_GATHER_KEY"
	switch {
	case file != "" && env != "":
		return nil, &usageError{msg: "the gather key is set twice, in REFRETRY_GATHER_KEY and with " + option + "; set it once"}
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, &usageError{msg: option + ": " + err.Error()}
		}
		key, from = bytes.TrimRight(b, "\r\n"), option+" "+file
	case env != "":
		key = []byte(env)
	default:
		return nil, nil
	}
	if len(key) < gather.MinKeyLen {
		return nil, &usageError{msg: from + ": " + (&gather.KeyError{Len: len(key)}).Error()}
	}
	return key, nil
}

// runner is the gather.Runner for the target, once refretry's options check out (a bad
// value is a usage error, as for every command), and the log of command ("gather
// land"), which its notes and pushes reach.
func (t gatherTarget) runner(in *invocation, command string) (*gather.Runner, *report.Log, error) {
	if err := in.check(); err != nil {
		return nil, nil, err
	}
	key, err := gatherKey(in, "--key-file", t.KeyFile)
	if err != nil {
		return nil, nil, err
	}
	if t.MaxAge <= 0 {
		return nil, nil, notPositive("gather", "--max-age", t.MaxAge.String())
	}
	lg := in.log(command)
	return &gather.Runner{
		Git: in.git(), Dirs: in.opts.Dirs, Env: in.env, Remote: t.Remote, Branch: t.Branch,
		Settings: in.settings, Key: key, MaxAge: t.MaxAge, Note: lg.Note, OnAttempt: lg.Attempt,
	}, lg, nil
}

// finish reports how a gather command ended (err's own sentence is its plain line)
// and returns its outcome: exit 128 for any error, as git's die().
func finish(lg *report.Log, err error, refs report.Refs) error {
	code := 0
	if err != nil {
		code = report.ExitFatal
	}
	lg.FinishSaying(code, err, func() report.Refs { return refs })
	if code != 0 {
		return exitError(code)
	}
	return nil
}

// GatherListCmd is `refretry gather list <remote> <branch>`.
type GatherListCmd struct{ gatherTarget }

// Run prints one line per staged, conflicting or discarded commit: its id, state,
// commit and age.
func (c *GatherListCmd) Run(in *invocation) error {
	r, lg, err := c.runner(in, "gather list")
	if err != nil {
		return err
	}
	l, err := r.List(in.ctx)
	if err != nil {
		return finish(lg, err, report.Refs{})
	}
	w := tabwriter.NewWriter(in.s.Stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintf(w, "ID\tSTATE\tCOMMIT\tSTAGED\n")
	for _, e := range l.Entries {
		age := "?"
		if !e.At.IsZero() {
			age = time.Since(e.At).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", e.ID, e.State, e.Commit, age)
	}
	if l.Lease != "" {
		fmt.Fprintf(w, "(a gather holds the lease: %s)\n", l.Lease)
	}
	if err := w.Flush(); err != nil {
		return finish(lg, err, report.Refs{})
	}
	for _, e := range l.Entries {
		if e.Problem != "" {
			lg.Note("gather", fmt.Sprintf("%s does not land: %s", e.ID, e.Problem))
		}
	}
	return finish(lg, nil, report.Refs{})
}

// GatherLandCmd is `refretry gather land <remote> <branch>`.
type GatherLandCmd struct {
	gatherTarget
	Accept []string `name:"accept" help:"Land this staged id although it does not verify against the gather key (a human's decision; repeatable)." placeholder:"ID"`
}

// Run gathers until nothing is staged.
func (c *GatherLandCmd) Run(in *invocation) error {
	arm(in.ctx) // land may wait out another gather's lease: catch signals from the start (signals.go)
	r, lg, err := c.runner(in, "gather land")
	if err != nil {
		return err
	}
	r.Accept = c.Accept
	if r.Key == nil {
		lg.Note("gather", unauthenticated)
	}
	res, err := r.Land(in.ctx, lg.Stderr())
	lg.Note("gather", fmt.Sprintf("landed %d staged commits in %d gathers", res.Gathered, res.Waves))
	if len(res.Refused) > 0 {
		lg.Note("gather", fmt.Sprintf("%d staged commits did not verify and stay staged: "+
			"discard them (gather discard) or land them with --accept <id>", len(res.Refused)))
	}
	if err != nil && in.ctx.Err() != nil {
		err = errors.New("stopped by a signal; what is still staged stays staged for the next gather")
	}
	return finish(lg, err, report.Refs{Updates: 1, Names: []string{"refs/heads/" + strings.TrimPrefix(c.Branch, "refs/heads/")}})
}

// GatherDiscardCmd is `refretry gather discard <remote> <branch> <id>...`.
type GatherDiscardCmd struct {
	gatherTarget
	IDs []string `arg:"" name:"id" help:"Staged ids, as gather list prints them."`
}

// Run discards the ids.
func (c *GatherDiscardCmd) Run(in *invocation) error {
	r, lg, err := c.runner(in, "gather discard")
	if err != nil {
		return err
	}
	return finish(lg, r.Discard(in.ctx, c.IDs, lg.Stderr()), report.Refs{Updates: len(c.IDs)})
}
