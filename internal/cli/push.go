package cli

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/platform"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/push"
)

// PushCmd runs git push with the caller's arguments, atomically unless told otherwise,
// retrying remote lock contention and transport failures. Its own options
// (PushOptions, options.go) may appear anywhere among git push's before "--"; they
// are taken out before git sees them.
type PushCmd struct {
	PushOptions

	// Args are git push's arguments, verbatim; Run fills them in, kong never sees them.
	Args []string `kong:"-"`
}

// takeOptions sets c's own options from args, the defaults where neither args nor the
// caller set one, and returns the rest for git. An option is spelled in full, --x v or
// --x=v; a switch given a value (--rebase=yes) is git's to judge. An option that takes
// a value and has none, or a number or a duration that is not positive, is a usage
// error.
func (c *PushCmd) takeOptions(args []string) ([]string, error) {
	def := pushDefaults()
	for _, o := range optionTable() {
		if o.cmd != "push" {
			continue
		}
		if f := o.field(&c.PushOptions); f.IsZero() {
			f.Set(o.field(&def))
		}
	}
	rest := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(rest, args[i:]...), nil
		}
		spelling, value, hasValue := strings.Cut(a, "=")
		o, own := lookup("push", spelling)
		switch {
		case !own || o.isBool && hasValue:
			rest = append(rest, a)
			if push.TakesNextArg(a) && i+1 < len(args) { // that value is git's, whatever it looks like
				i++
				rest = append(rest, args[i])
			}
			continue
		case o.isBool:
			o.field(&c.PushOptions).SetBool(true)
			continue
		case !hasValue && i+1 >= len(args):
			return nil, &usageError{msg: "push: " + spelling + " needs a value"}
		case !hasValue:
			i++
			value = args[i]
		}
		if err := setPushValue(o.field(&c.PushOptions), spelling, value); err != nil {
			return nil, err
		}
	}
	return rest, nil
}

// setPushValue sets one of push's options, given as spelling, to value, by the
// field's type: a duration or a number must be positive.
func setPushValue(f reflect.Value, spelling, value string) error {
	switch f.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(value)
		if err != nil || d <= 0 {
			return notPositive("push", spelling, value)
		}
		f.SetInt(int64(d))
	case int:
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 {
			return &usageError{msg: fmt.Sprintf("push: %s needs a positive number, not %q", spelling, value)}
		}
		f.SetInt(int64(n))
	case string:
		f.SetString(value)
	default:
		panic("cli: no parser for push's " + spelling)
	}
	return nil
}

// Run runs the push.
func (c *PushCmd) Run(in *invocation) error {
	if err := in.check(); err != nil {
		return err
	}
	rest, err := c.takeOptions(c.Args)
	if err != nil {
		return err
	}
	if err := c.checkAPI(); err != nil {
		return err
	}
	lg := in.log("push")
	if c.API && !c.Gather {
		return c.runAPI(in, lg, rest)
	}
	if c.Gather {
		return c.runGather(in, lg, rest)
	}
	return runPush(in, lg, &push.Runner{NoAtomic: c.NoAtomic, Rebase: c.Rebase, Regenerate: c.Regenerate}, rest)
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
	lg.Finish(res.ExitCode, err, func() report.Refs { return pushRefs(res.Report.Refs, err) })
	if errors.Is(err, failure.ErrGitNotFound) {
		return exitError(report.ExitGitMissing)
	}
	if res.ExitCode != 0 {
		return exitError(res.ExitCode)
	}
	return nil
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
