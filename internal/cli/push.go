package cli

import (
	"os"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/refretry/refretry/internal/platform"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/push"
)

// PushCmd runs git push with the caller's arguments, atomically unless told otherwise,
// retrying remote lock contention and transport failures. Its own options
// (PushOptions, options.go) may appear anywhere among git push's before "--"; kong
// reads them, and git never sees them (gitArgs).
type PushCmd struct {
	PushOptions

	// Args are git push's arguments, verbatim but for push's own options.
	Args gitArgs `arg:"" optional:"" passthrough:"all" of:"push" help:"git push's arguments."`
}

// gitArgs are git's arguments to push or fetch: from kong's scanner, which holds
// them all (kong is given them after "--": kongArgs), it keeps git's and gives the
// command's own options, with their values, back to kong to read: --help, and push's
// (its tag of:"push"). A value is whatever follows an option that takes one
// (--regenerate --rebase: the command is "--rebase"), also for git push's own options
// (push.TakesNextArg: -o --rebase is git's); a switch given a value (--rebase=yes) is
// git's to judge; after "--" everything is git's.
type gitArgs []string

// Decode takes the arguments from kong's scanner.
func (a *gitArgs) Decode(ctx *kong.DecodeContext) error {
	if ctx.Value.Tag.Get("of") == "push" {
		*a = takeGitArgs(ctx, grammarIndex.pushSwitches, grammarIndex.pushValued, push.TakesNextArg)
	} else {
		*a = takeGitArgs(ctx, []string{"--help"}, nil, func(string) bool { return false })
	}
	return nil
}

// takeGitArgs returns the arguments left on kong's scanner but the command's own
// options (switches, valued), which it gives back to kong to read. takesNext says
// which of git's options take the next argument as their value.
func takeGitArgs(ctx *kong.DecodeContext, switches, valued []string, takesNext func(string) bool) []string {
	var args, git []string
	for t := ctx.Scan.Pop(); !t.IsEOL(); t = ctx.Scan.Pop() {
		args = append(args, t.String())
	}
	var own []kong.Token
	flag := func(name string) { own = append(own, kong.Token{Type: kong.FlagToken, Value: name[2:]}) }
	value := func(v string) { own = append(own, kong.Token{Type: kong.FlagValueToken, Value: v}) }
	for i := 1; i < len(args); i++ { // args[0] is the "--" kongArgs put first
		a := args[i]
		name, v, hasValue := strings.Cut(a, "=")
		switch {
		case a == "--":
			git = append(git, args[i:]...)
			i = len(args)
		case slices.Contains(switches, a):
			flag(a)
		case !slices.Contains(valued, name):
			git = append(git, a)
			if takesNext(a) && i+1 < len(args) {
				i++
				git = append(git, args[i])
			}
		case hasValue:
			flag(name)
			value(v)
		case i+1 < len(args):
			flag(name)
			i++
			value(args[i])
		default:
			flag(name) // with no value: Setting.Decode refuses it
		}
	}
	for i := len(own) - 1; i >= 0; i-- {
		ctx.Scan.PushToken(own[i])
	}
	return git
}

// Run runs the push.
func (c *PushCmd) Run(in *invocation) error {
	if err := in.check(); err != nil {
		return err
	}
	for _, s := range c.settings() {
		if err := s.resolve(nil); err != nil {
			return err
		}
	}
	if err := c.checkAPI(); err != nil {
		return err
	}
	lg := in.log("push")
	rest := []string(c.Args)
	if c.API && !c.Gather {
		return c.runAPI(in, lg, rest)
	}
	if c.Gather {
		return c.runGather(in, lg, rest)
	}
	return runPush(in, lg, &push.Runner{NoAtomic: c.NoAtomic, Rebase: c.Rebase, Regenerate: c.Regenerate.V}, rest)
}

// runPush runs p, completed with what the invocation gives every push (git, -C,
// the environment, the settings, the reporter), with git push's arguments args, and
// reports it: `refretry push` and the shim's `git push`. git's progress is shown
// where git push shows it, when the caller's stderr is a terminal (push.Runner's
// Progress).
func runPush(in *invocation, lg *report.Log, p *push.Runner, args []string) error {
	p.Git, p.Dirs, p.Env = in.git(), in.opts.Dirs, in.env
	if f, ok := in.s.Stderr.(*os.File); ok {
		p.Progress = platform.IsTerminal(f)
	}
	p.Settings, p.OnAttempt, p.Note = in.settings, lg.Attempt, lg.Note
	res, err := p.Run(in.ctx, args, nil, in.s.Stdout, lg.Stderr())
	return ended(lg, res.ExitCode, err, func() report.Refs { return pushRefs(res.Report.Refs, err) })
}

// pushRefs are the refs of a push, for its summary: those it updated, or, when it
// failed, those it tried to.
func pushRefs(final []push.RefStatus, err error) report.Refs {
	refs := report.Refs{Updates: len(final)}
	if err != nil && len(final) == 0 {
		refs.Updates = -1
		return refs
	}
	for _, r := range final {
		if err == nil && r.Rejected() {
			continue
		}
		refs.Names = append(refs.Names, r.To)
	}
	return refs
}
