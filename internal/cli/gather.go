package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/refretry/refretry/gather"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/retry"
)

// runGather is `refretry push --gather`: the gather, and on a conflict the fallback
// the caller asked for. Its git arguments (rest) are the gather's to read.
func (c *PushCmd) runGather(in *invocation, lg *report.Log, rest []string) error {
	key, err := gatherKey(in, "--gather-key-file", c.GatherKeyFile.V)
	if err != nil {
		return err
	}
	// Without a key the run says so before anything else it reports, and arguments
	// the gather cannot take are a usage error, said alone: the note waits for the
	// first thing the Runner reports (it reads its arguments first), or the end.
	warn := func() {}
	if key == nil {
		warned := false
		warn = func() {
			if !warned {
				warned = true
				lg.Note("gather", unauthenticated)
			}
		}
	}
	g := &gather.Runner{
		Config:     in.runnerConfig(lg),
		MaxPerWave: c.GatherMax.V, LeaseTimeout: c.GatherLease.V, Key: key, MaxAge: c.GatherMaxAge.V, NoWait: c.NoWait,
		API: gatherAPI(c.API, c.Forge.V),
	}
	g.Note = func(kind, msg string) { warn(); lg.Note(kind, msg) }
	g.OnAttempt = func(a retry.Attempt) { warn(); lg.Attempt(a) }
	res, err := g.Run(in.ctx, rest, nil, in.s.Stdout, lg.Stderr())
	var bad *gather.ArgsError
	if errors.As(err, &bad) {
		return &usageError{msg: "push --gather: " + bad.Error()}
	}
	warn()
	var conflict *gather.ConflictError
	if errors.As(err, &conflict) && (c.Rebase || c.Regenerate.V != "") {
		lg.Note("gather", err.Error()+"; pushing it with "+map[bool]string{true: "--rebase", false: "--regenerate"}[c.Rebase]+" instead")
		p := &push.Runner{
			Config: in.runnerConfig(lg),
			Rebase: c.Rebase, Regenerate: c.Regenerate.V,
		}
		res, err := p.Run(in.ctx, conflict.Push, nil, in.s.Stdout, lg.Stderr())
		return ended(lg, res.ExitCode, err, func() report.Refs { return pushRefs(res.Report.Refs, err) })
	}
	return ended(lg, res.ExitCode, err, func() report.Refs { return gatherRefs(res) })
}

// gatherRefs is the ref a push --gather updated, for its summary: the branch, or the
// staging ref when the job did not wait for its commit to land (--no-wait).
func gatherRefs(res gather.Result) report.Refs {
	if !res.Landed && res.StagedRef != "" {
		return report.Refs{Updates: 1, Names: []string{res.StagedRef}}
	}
	return report.Refs{Updates: 1, Names: []string{res.Ref}}
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
	Remote  string                 `arg:"" help:"The remote: a name or a URL."`
	Branch  string                 `arg:"" help:"The branch the commits are staged for."`
	KeyFile string                 `name:"key-file" help:"Read the gather key from this file instead of REFRETRY_GATHER_KEY." placeholder:"FILE"`
	MaxAge  Setting[time.Duration] `name:"max-age" of:"gather" help:"With a gather key: how old a staged commit may be and still land." placeholder:"DURATION"`
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
	if err := t.MaxAge.of(gather.DefaultMaxAge).resolve(nil); err != nil {
		return nil, nil, err
	}
	lg := in.log(command)
	return &gather.Runner{
		Config: in.runnerConfig(lg),
		Key:    key, MaxAge: t.MaxAge.V,
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
	l, err := r.List(in.ctx, c.Remote, c.Branch)
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
	API    bool     `name:"api" help:"Land each wave through the forge's API, as push --gather --api does (docs/push.md#api-commits)."`
	Forge  string   `name:"forge" help:"With --api: github, gitea or gitlab (found from the CI's environment, else the remote's host, when not given)." placeholder:"FORGE" enum:",github,gitea,gitlab" default:""`
}

// Run gathers until nothing is staged.
func (c *GatherLandCmd) Run(in *invocation) error {
	r, lg, err := c.runner(in, "gather land")
	if err != nil {
		return err
	}
	r.Accept, r.API = c.Accept, gatherAPI(c.API, c.Forge)
	if r.Key == nil {
		lg.Note("gather", unauthenticated)
	}
	res, err := r.Land(in.ctx, c.Remote, c.Branch, lg.Stderr())
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
	return finish(lg, r.Discard(in.ctx, c.Remote, c.Branch, c.IDs, lg.Stderr()), report.Refs{Updates: len(c.IDs)})
}
