package cli

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/push"
)

// PushCmd runs git push with the caller's arguments, atomically unless told otherwise,
// retrying remote lock contention and transport failures. Its own options may appear
// anywhere among git push's before "--"; they are taken out before git sees them.
type PushCmd struct {
	NoAtomic    bool          `help:"Push without --atomic: refs the remote accepts are updated even when others are rejected."`
	Rebase      bool          `help:"When a branch was rejected because the remote moved it, replay the pushed commits onto the remote's tip and push again (from a branch, a detached HEAD or <commit>:<branch>)."`
	Regenerate  string        `help:"When a branch was rejected because the remote moved it (or --rebase conflicts), reset the checked-out commit and work tree to the remote's tip, run this shell command there, commit what it changed with the original commit's author and message, and push again." placeholder:"COMMAND"`
	Gather      bool          `help:"Land the commit on the branch with the other jobs pushing to it: stage it in a ref of its own, and let one job replay everyone's onto the branch in one push (docs/push.md). Takes <remote> [<src>:]<branch>; with --rebase or --regenerate, a commit that conflicts falls back to them."`
	GatherMax   int           `help:"Staged commits one gather takes at most (forges cap the refs one push updates)." default:"64" placeholder:"N"`
	GatherLease time.Duration `help:"How long a gather lease may stay unchanged before a waiting job takes it over (its holder is taken to be gone); a job doubles it after each take-over it makes." default:"30s" placeholder:"DURATION"`
	// The gather key itself comes from REFRETRY_GATHER_KEY or a file: never the command line, which /proc shows.
	GatherKeyFile string        `help:"Read the gather key (the secret the pipeline's jobs share, docs/security.md) from this file instead of REFRETRY_GATHER_KEY." placeholder:"FILE"`
	GatherMaxAge  time.Duration `help:"With a gather key: how old a staged commit may be and still land (older ones stay staged, named in a note)." default:"168h" placeholder:"DURATION"`

	// Args are git push's arguments, verbatim; Run fills them in, kong never sees them.
	Args []string `kong:"-"`
}

// pushOptions are PushCmd's own options, by spelling, read from its declaration: its
// bool flags and its string and int options (which take a value, "--x v" or "--x=v").
var pushOptions = sync.OnceValue(func() map[string]int {
	t := reflect.TypeFor[PushCmd]()
	m := map[string]int{}
	for i := range t.NumField() {
		switch f := t.Field(i); f.Type.Kind() {
		case reflect.Bool, reflect.String, reflect.Int, reflect.Int64:
			m["--"+flagName(f)] = i
		}
	}
	return m
})

// takeOptions sets c's own options from args and returns the rest for git. An option
// that takes a value and has none is a usage error.
func (c *PushCmd) takeOptions(args []string) ([]string, error) {
	rest := make([]string, 0, len(args))
	v := reflect.ValueOf(c).Elem()
	// Kong never sees these options: their defaults are set here, from the same tags.
	for i := range v.NumField() {
		f, def := v.Field(i), v.Type().Field(i).Tag.Get("default")
		switch {
		case def == "" || !f.IsZero():
		case f.Type() == reflect.TypeFor[time.Duration]():
			d, _ := time.ParseDuration(def)
			f.SetInt(int64(d))
		case f.Kind() == reflect.Int:
			n, _ := strconv.Atoi(def)
			f.SetInt(int64(n))
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(rest, args[i:]...), nil
		}
		name, value, hasValue := strings.Cut(a, "=")
		if field, ok := pushOptions()[name]; ok {
			f := v.Field(field)
			if f.Kind() == reflect.Bool {
				if hasValue {
					rest = append(rest, a) // not refretry's spelling: git's to judge
					continue
				}
				f.SetBool(true)
				continue
			}
			if !hasValue {
				if i+1 >= len(args) {
					return nil, &usageError{msg: "push: " + name + " needs a value"}
				}
				i++
				value = args[i]
			}
			if f.Type() == reflect.TypeFor[time.Duration]() {
				d, err := time.ParseDuration(value)
				if err != nil || d <= 0 {
					return nil, notPositive("push", name, value)
				}
				f.SetInt(int64(d))
				continue
			}
			if f.Kind() == reflect.Int {
				n, err := strconv.Atoi(value)
				if err != nil || n < 1 {
					return nil, &usageError{msg: fmt.Sprintf("push: %s needs a positive number, not %q", name, value)}
				}
				f.SetInt(int64(n))
				continue
			}
			f.SetString(value)
			continue
		}
		rest = append(rest, a)
		if push.TakesNextArg(a) && i+1 < len(args) { // that value is git's, whatever it looks like
			i++
			rest = append(rest, args[i])
		}
	}
	return rest, nil
}

// Run runs the push.
func (c *PushCmd) Run(in *invocation) error {
	arm(in.ctx) // a push may take long: catch signals from the start (signals.go)
	if err := in.check(); err != nil {
		return err
	}
	rest, err := c.takeOptions(c.Args)
	if err != nil {
		return err
	}
	lg := in.log("push")
	if c.Gather {
		return c.runGather(in, lg, rest)
	}
	p := &push.Runner{
		Git: in.git(), Dirs: in.opts.Dirs, Env: in.env,
		NoAtomic: c.NoAtomic, Rebase: c.Rebase, Regenerate: c.Regenerate,
		Settings: in.settings, OnAttempt: lg.Attempt, Note: lg.Note,
	}
	res, err := p.Run(in.ctx, rest, nil, in.s.Stdout, lg.Stderr())
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
