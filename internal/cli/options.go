package cli

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/refretry/refretry/ci"
	"github.com/refretry/refretry/gather"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// Options are refretry's own options, which come before the command, each declared
// here once and nowhere else (push's own are PushOptions, below): its spelling (the
// name and short tags, which kong and the reader in line.go both read),
// its help, the environment variable (envvar) and the git config key (gitconfig) that
// stand in for it when it is not given, what applies when it is unset if that is not a
// value (unset), and its type, the field's. Its default is the library's (defaults).
// Precedence: flag > environment > git config > default. An option with no environment
// variable (-C) is the command line's alone.
//
// The command line gives text, which line.go keeps as given until check resolves it
// (so that a bad value is reported where it came from). A caller may also set fields
// directly, as the shim does: a field set counts as given on the command line. The
// resolved values are Options too.
type Options struct {
	Dirs            []string      `name:"directory" short:"C" sep:"none" placeholder:"PATH" help:"Run as if started in PATH (repeatable, as git -C)."`
	Git             string        `name:"git" placeholder:"PATH" envvar:"REFRETRY_GIT" unset:"git on PATH" help:"git executable to run."`
	Timeout         time.Duration `name:"timeout" placeholder:"DURATION" envvar:"REFRETRY_TIMEOUT" gitconfig:"refretry.timeout" help:"Total retry budget: no attempt starts after it. Not given, a push that waits on other jobs (--rebase, --regenerate, --gather, push-rebase) counts only time in which the remote did not move, up to 15 minutes (docs/push.md)."`
	MaxAttempts     int           `name:"max-attempts" placeholder:"N" envvar:"REFRETRY_MAX_ATTEMPTS" gitconfig:"refretry.maxAttempts" help:"Most attempts, the first included; 0 means no cap."`
	InitialDelay    time.Duration `name:"initial-delay" placeholder:"DURATION" envvar:"REFRETRY_INITIAL_DELAY" gitconfig:"refretry.initialDelay" help:"Delay before the first retry, before jitter."`
	MaxDelay        time.Duration `name:"max-delay" placeholder:"DURATION" envvar:"REFRETRY_MAX_DELAY" gitconfig:"refretry.maxDelay" help:"Cap on the delay between attempts."`
	StaleAfter      time.Duration `name:"stale-after" placeholder:"DURATION" envvar:"REFRETRY_STALE_AFTER" gitconfig:"refretry.staleAfter" help:"A lock older than this is stale: stop at once instead of waiting."`
	PIDGrace        time.Duration `name:"pid-grace" placeholder:"DURATION" envvar:"REFRETRY_PID_GRACE" gitconfig:"refretry.pidGrace" unset:"--stale-after" help:"A lock whose ~pid.lock holder is not running here is stale only once older than this: a holder in another container's pid namespace looks the same."`
	BreakStaleLocks bool          `name:"break-stale-locks" envvar:"REFRETRY_BREAK_STALE_LOCKS" gitconfig:"refretry.breakStaleLocks" help:"Remove a stale lock (older than --stale-after with no running holder on record, or than --pid-grace with a holder pid not running here), then retry."`
	Coalesce        bool          `name:"coalesce" envvar:"REFRETRY_COALESCE" gitconfig:"refretry.coalesce" help:"Let concurrent single-ref updates of one repository be committed together by one git, on the files backend too (on by default for reftable; docs/coalescing.md)."`
	PushRebase      bool          `name:"push-rebase" envvar:"REFRETRY_PUSH_REBASE" gitconfig:"refretry.pushRebase" help:"Rebase a push that lost a race, as push --rebase does, when it can be rebased safely: not a force push, a lease, a mirror, a deletion or a tag. For pushes whose command line is not refretry's: the git shim's git push (docs/push.md)."`
	LogFormat       ci.Format     `name:"log-format" placeholder:"FORMAT" envvar:"REFRETRY_LOG_FORMAT" gitconfig:"refretry.logFormat" help:"Log format on stderr: auto, text, json, github or gitlab (auto: github or gitlab when detected, else refretry's plain lines)."`
	LogFile         string        `name:"log-file" placeholder:"PATH" envvar:"REFRETRY_LOG_FILE" gitconfig:"refretry.logFile" help:"Also append JSON lines to PATH."`
}

// PushOptions are push's own options, declared as Options are (name, placeholder,
// help; none has an environment variable or a git config key), and read by push.go
// wherever they appear among git push's arguments before "--". form is the usage
// line that names the option (kong.go): push's, or push --gather's, which the option
// named after the form (--gather) opens. Their defaults are the libraries' own
// (pushDefaults).
type PushOptions struct {
	NoAtomic    bool          `name:"no-atomic" form:"push" help:"Push without --atomic: refs the remote accepts are updated even when others are rejected."`
	Rebase      bool          `name:"rebase" form:"push" help:"When a branch was rejected because the remote moved it, replay the pushed commits onto the remote's tip and push again (from a branch, a detached HEAD or <commit>:<branch>)."`
	Regenerate  string        `name:"regenerate" form:"push" placeholder:"COMMAND" help:"When a branch was rejected because the remote moved it (or --rebase conflicts), reset the checked-out commit and work tree to the remote's tip, run this shell command there, commit what it changed with the original commit's author and message, and push again."`
	Gather      bool          `name:"gather" form:"gather" help:"Land the commit on the branch with the other jobs pushing to it: stage it in a ref of its own, and let one job replay everyone's onto the branch in one push (docs/push.md). Takes <remote> [<src>:]<branch>; with --rebase or --regenerate, a commit that conflicts falls back to them."`
	GatherMax   int           `name:"gather-max" form:"gather" placeholder:"N" help:"Staged commits one gather takes at most (forges cap the refs one push updates)."`
	GatherLease time.Duration `name:"gather-lease" form:"gather" placeholder:"DURATION" help:"How long a gather lease may stay unchanged before a waiting job takes it over (its holder is taken to be gone); a job doubles it after each take-over it makes."`
	// The gather key itself comes from REFRETRY_GATHER_KEY or a file: never the command line, which /proc shows.
	GatherKeyFile string        `name:"gather-key-file" form:"gather" placeholder:"FILE" help:"Read the gather key (the secret the pipeline's jobs share, docs/security.md) from this file instead of REFRETRY_GATHER_KEY."`
	GatherMaxAge  time.Duration `name:"gather-max-age" form:"gather" placeholder:"DURATION" help:"With a gather key: how old a staged commit may be and still land (older ones stay staged, named in a note)."`
	NoWait        bool          `name:"no-wait" form:"gather" help:"Stage the commit and exit 0 without waiting for it to land: for a fan-in, where a later job runs refretry gather land."`
	API           bool          `name:"api" form:"api" help:"Land the commits through the forge's API instead of git push, so that the forge makes them (on GitHub, with the job's App token, signed and Verified): <remote> [<src>:]<branch>, replayed onto the branch as --rebase does; with --gather, the gatherer lands each wave that way (docs/push.md#api-commits). The token comes from REFRETRY_API_TOKEN, else GITHUB_TOKEN, GITEA_TOKEN or CI_JOB_TOKEN."`
	Forge         string        `name:"forge" form:"api" placeholder:"FORGE" help:"With --api: github, gitea or gitlab (found from the CI's environment, else the remote's host, when not given)."`
}

// defaults are the values no flag, environment variable or git config sets: the
// libraries' own.
func defaults() Options {
	p := retry.DefaultPolicy()
	return Options{
		Git: "git", Timeout: p.Timeout, MaxAttempts: p.MaxAttempts, InitialDelay: p.InitialDelay,
		MaxDelay: p.MaxDelay, StaleAfter: settings.DefaultStaleAfter, LogFormat: "auto",
	}
}

// pushDefaults are push's options when not given: the gather package's own.
func pushDefaults() PushOptions {
	return PushOptions{GatherMax: gather.DefaultMaxPerWave, GatherLease: gather.DefaultLeaseTimeout, GatherMaxAge: gather.DefaultMaxAge}
}

// Policy is the retry policy the values give.
func (v Options) Policy() retry.Policy {
	p := retry.DefaultPolicy()
	p.Timeout, p.MaxAttempts, p.InitialDelay, p.MaxDelay = v.Timeout, v.MaxAttempts, v.InitialDelay, v.MaxDelay
	return p
}

// option is one field of Options or PushOptions as the readers, the resolver, the
// help, the usage text and the README tables need it.
type option struct {
	of     reflect.Type // Options or PushOptions
	cmd    string       // "": refretry's, before the command; "push": push's own
	form   string       // push's: the usage line that names it, "push" or "gather"
	index  int          // in of
	name   string       // "--timeout"
	short  string       // "-C", or ""
	isBool bool
	isList bool   // repeatable: each value is kept (-C)
	envVar string // "": not a setting, the command line's alone
	config string // git config key, lower-cased as git config --get-regexp prints it
	tag    reflect.StructTag
}

// optionTable is Options, then PushOptions, read once by reflection: the one
// declaration every reader, resolver and description here works from.
var optionTable = sync.OnceValue(func() []option {
	var table []option
	for _, decl := range []struct {
		of  reflect.Type
		cmd string
	}{{reflect.TypeFor[Options](), ""}, {reflect.TypeFor[PushOptions](), "push"}} {
		for i := range decl.of.NumField() {
			f := decl.of.Field(i)
			name := f.Tag.Get("name")
			if name == "" {
				panic("cli: option " + f.Name + " has no name tag") // kong would make one its own way
			}
			o := option{of: decl.of, cmd: decl.cmd, form: f.Tag.Get("form"), index: i, name: "--" + name,
				isBool: f.Type.Kind() == reflect.Bool, isList: f.Type.Kind() == reflect.Slice,
				envVar: f.Tag.Get("envvar"), config: strings.ToLower(f.Tag.Get("gitconfig")), tag: f.Tag}
			if s := f.Tag.Get("short"); s != "" {
				o.short = "-" + s
			}
			table = append(table, o)
		}
	}
	return table
})

// lookup finds an option of cmd ("" for refretry's own, "push") by its spelling
// ("--timeout", "-C").
func lookup(cmd, spelling string) (option, bool) {
	for _, o := range optionTable() {
		if o.cmd == cmd && (o.name == spelling || o.short != "" && o.short == spelling) {
			return o, true
		}
	}
	return option{}, false
}

// field is the option's field in opts, an *Options or a *PushOptions as the option is.
func (o option) field(opts any) reflect.Value {
	v := reflect.ValueOf(opts).Elem()
	if v.Type() != o.of {
		panic("cli: option " + o.name + " is not a field of " + v.Type().String())
	}
	return v.Field(o.index)
}

// defaultValue is the option's value when nothing sets it.
func (o option) defaultValue() reflect.Value {
	if o.cmd == "push" {
		d := pushDefaults()
		return o.field(&d)
	}
	d := defaults()
	return o.field(&d)
}

// explicit is the option's text given on the command line (flags, by spelling) or,
// failing that, in the environment, with where it came from for messages; "" when
// neither gave one.
func (o option) explicit(flags map[string]string, env []string) (value, from string) {
	if v := flags[o.name]; v != "" {
		return v, o.name + " " + strconv.Quote(v)
	}
	if v := gitexec.Getenv(env, o.envVar); v != "" {
		return v, o.envVar + "=" + strconv.Quote(v)
	}
	return "", ""
}

// parse reads text into the option's field of into, by that field's type.
func (o option) parse(into *Options, text string) error {
	f := o.field(into)
	switch f.Interface().(type) {
	case time.Duration:
		d, err := time.ParseDuration(text)
		if err != nil || d < 0 {
			return fmt.Errorf("not a non-negative duration such as 500ms, 30s or 2m")
		}
		f.SetInt(int64(d))
	case int:
		n, err := strconv.Atoi(text)
		if err != nil || n < 0 {
			return fmt.Errorf("not a non-negative integer")
		}
		f.SetInt(int64(n))
	case bool:
		on, ok := gitBool(text)
		if !ok {
			return fmt.Errorf("not a boolean such as 1, true, 0 or false")
		}
		f.SetBool(on)
	case ci.Format:
		format, err := ci.ParseFormat(text)
		if err != nil {
			return err
		}
		f.Set(reflect.ValueOf(format))
	case string:
		f.SetString(text)
	default:
		panic("cli: no parser for option " + o.name)
	}
	return nil
}

// given resolves what the caller, the command line (flags: each option's text, by
// spelling) and the environment say, known before git runs: a bad value there is a
// usage error (exit 129). set holds the options that were given.
func given(opts *Options, flags map[string]string, env []string) (v Options, set map[string]bool, err error) {
	v, set = defaults(), map[string]bool{}
	v.Dirs = opts.Dirs
	for _, o := range optionTable() {
		if o.envVar == "" {
			continue
		}
		if f := o.field(opts); !f.IsZero() { // set by the caller
			o.field(&v).Set(f)
			set[o.name] = true
			continue
		}
		text, from := o.explicit(flags, env)
		if text == "" {
			continue
		}
		if err := o.parse(&v, text); err != nil {
			return v, nil, &usageError{fmt.Sprintf("%s: %v", from, err)}
		}
		set[o.name] = true
	}
	return v, set, nil
}

// withConfig completes values from git config (keys lower-cased) for the options
// neither the command line nor the environment set. A bad value there is an error,
// named after its key.
func withConfig(v Options, set map[string]bool, cfg map[string]string) (Options, error) {
	for _, o := range optionTable() {
		if err := o.fromConfig(&v, set, cfg); err != nil {
			return v, err
		}
	}
	return v, nil
}

// fromConfig sets the option's value from git config, unless it was set already or
// git config has none.
func (o option) fromConfig(v *Options, set map[string]bool, cfg map[string]string) error {
	if o.config == "" || set[o.name] {
		return nil
	}
	text, ok := cfg[o.config]
	if !ok || text == "" && !o.isBool {
		return nil
	}
	if text == "" {
		text = "true" // a bare "key" line in a config file means true
	}
	if err := o.parse(v, text); err != nil {
		return fmt.Errorf("bad value, git config %s=%q: %v", o.config, text, err)
	}
	return nil
}

// gitBool reads git's spellings of a boolean.
func gitBool(v string) (on, ok bool) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}

// about is what the declaration says of the option beside its help, as --help and
// the README say it: its environment variable (=1 for a switch), its git config key,
// and what applies when it is unset: said in words (unset), or the default value
// (def, "" for none: off, or an empty string).
func (o option) about() (env, config, unset, def string) {
	if o.envVar == "" && o.cmd == "" {
		return "", "", "", "" // -C: the command line's alone
	}
	if env = o.envVar; env != "" && o.isBool {
		env += "=1"
	}
	unset = o.tag.Get("unset")
	if d := o.defaultValue(); unset == "" && !d.IsZero() {
		def = fmt.Sprint(d.Interface())
	}
	return env, o.tag.Get("gitconfig"), unset, def
}
