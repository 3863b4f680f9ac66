package cli

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/alecthomas/kong"

	"github.com/refretry/refretry/ci"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/transaction"
)

// Options are refretry's own options, each declared here once. kong reads a flag's
// spelling and help from the tags; `envvar` and `gitconfig` name the environment
// variable and the git config key that stand in for a flag not given; the value's type
// is that of the field of the same name in Values, and its default is the library's
// (defaults). Precedence: flag > environment > git config > default.
//
// The fields hold the text as given. kong and the fast path (fastOptions) fill them
// the same way; resolve turns them into Values.
type Options struct {
	Dirs            []string `short:"C" name:"directory" sep:"none" placeholder:"PATH" help:"Run as if started in PATH (repeatable, as git -C)."`
	Git             string   `placeholder:"PATH" envvar:"REFRETRY_GIT" help:"git executable to run."`
	Timeout         string   `placeholder:"DURATION" envvar:"REFRETRY_TIMEOUT" gitconfig:"refretry.timeout" help:"Total retry budget: no attempt starts after it."`
	MaxAttempts     string   `placeholder:"N" envvar:"REFRETRY_MAX_ATTEMPTS" gitconfig:"refretry.maxAttempts" help:"Most attempts, the first included; 0 means no cap."`
	InitialDelay    string   `placeholder:"DURATION" envvar:"REFRETRY_INITIAL_DELAY" gitconfig:"refretry.initialDelay" help:"Delay before the first retry, before jitter."`
	MaxDelay        string   `placeholder:"DURATION" envvar:"REFRETRY_MAX_DELAY" gitconfig:"refretry.maxDelay" help:"Cap on the delay between attempts."`
	StaleAfter      string   `placeholder:"DURATION" envvar:"REFRETRY_STALE_AFTER" gitconfig:"refretry.staleAfter" help:"A lock older than this is stale: stop at once instead of waiting."`
	PIDGrace        string   `name:"pid-grace" placeholder:"DURATION" envvar:"REFRETRY_PID_GRACE" gitconfig:"refretry.pidGrace" help:"A lock whose ~pid.lock holder is not running here is stale only once older than this: a holder in another container's pid namespace looks the same."`
	BreakStaleLocks bool     `envvar:"REFRETRY_BREAK_STALE_LOCKS" gitconfig:"refretry.breakStaleLocks" help:"Remove a stale lock (older than --stale-after with no running holder on record, or than --pid-grace with a holder pid not running here), then retry."`
	Coalesce        bool     `envvar:"REFRETRY_COALESCE" gitconfig:"refretry.coalesce" help:"Let concurrent single-ref updates of one repository be committed together by one git, on the files backend too (on by default for reftable; docs/coalescing.md)."`
	LogFormat       string   `placeholder:"FORMAT" envvar:"REFRETRY_LOG_FORMAT" gitconfig:"refretry.logFormat" help:"Log format on stderr: auto, text, json, github or gitlab (auto: github or gitlab when detected, else refretry's plain lines)."`
	LogFile         string   `placeholder:"PATH" envvar:"REFRETRY_LOG_FILE" gitconfig:"refretry.logFile" help:"Also append JSON lines to PATH."`
}

// Values are refretry's settings, resolved: for each option of Options that has an
// environment variable, a field of the same name and of the option's type.
type Values struct {
	Git             string
	Timeout         time.Duration
	MaxAttempts     int
	InitialDelay    time.Duration
	MaxDelay        time.Duration
	StaleAfter      time.Duration
	PIDGrace        time.Duration // 0: StaleAfter
	BreakStaleLocks bool
	Coalesce        bool
	LogFormat       ci.Format
	LogFile         string
}

// defaults are the values no flag, environment variable or git config sets: the
// libraries' own.
func defaults() Values {
	p := retry.DefaultPolicy()
	return Values{
		Git: "git", Timeout: p.Timeout, MaxAttempts: p.MaxAttempts, InitialDelay: p.InitialDelay,
		MaxDelay: p.MaxDelay, StaleAfter: transaction.DefaultStaleAfter, LogFormat: "auto",
	}
}

// Policy is the retry policy the values give.
func (v Values) Policy() retry.Policy {
	p := retry.DefaultPolicy()
	p.Timeout, p.MaxAttempts, p.InitialDelay, p.MaxDelay = v.Timeout, v.MaxAttempts, v.InitialDelay, v.MaxDelay
	return p
}

// option is one field of Options as the fast path, the resolver and the help need it.
type option struct {
	index  int    // in Options
	name   string // "--timeout"
	short  string // "-C", or ""
	isBool bool
	envVar string
	config string // git config key, lower-cased as git config --get-regexp prints it
	target int    // index in Values; -1 for none
}

// optionTable is Options read once by reflection: the one declaration every parser
// and resolver here works from.
var optionTable = sync.OnceValue(func() []option {
	ot, vt := reflect.TypeFor[Options](), reflect.TypeFor[Values]()
	table := make([]option, 0, ot.NumField())
	for i := range ot.NumField() {
		f := ot.Field(i)
		o := option{index: i, name: "--" + flagName(f), isBool: f.Type.Kind() == reflect.Bool,
			envVar: f.Tag.Get("envvar"), config: strings.ToLower(f.Tag.Get("gitconfig")), target: -1}
		if s := f.Tag.Get("short"); s != "" {
			o.short = "-" + s
		}
		if v, ok := vt.FieldByName(f.Name); ok {
			o.target = v.Index[0]
		}
		table = append(table, o)
	}
	return table
})

// flagName is a field's flag name as kong spells it: the name tag, or the field's
// name in kebab case.
func flagName(f reflect.StructField) string {
	if n := f.Tag.Get("name"); n != "" {
		return n
	}
	var b strings.Builder
	for i, r := range f.Name {
		if 'A' <= r && r <= 'Z' {
			if i > 0 {
				b.WriteByte('-')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lookup finds an option by its spelling ("--timeout", "-C").
func lookup(spelling string) (option, bool) {
	for _, o := range optionTable() {
		if o.name == spelling || o.short != "" && o.short == spelling {
			return o, true
		}
	}
	return option{}, false
}

// text is the option's value as given on the command line, "" when not given.
func (o option) text(opts *Options) string {
	f := reflect.ValueOf(opts).Elem().Field(o.index)
	switch f.Kind() {
	case reflect.Bool:
		if f.Bool() {
			return "true"
		}
		return ""
	case reflect.String:
		return f.String()
	}
	return ""
}

// explicit is the option's value given on the command line or, failing that, in the
// environment, with where it came from for messages; "" when neither gave one.
func (o option) explicit(opts *Options, env []string) (value, from string) {
	if v := o.text(opts); v != "" {
		return v, o.name + " " + strconv.Quote(v)
	}
	if o.envVar == "" {
		return "", ""
	}
	if v := gitexec.Getenv(env, o.envVar); v != "" {
		return v, o.envVar + "=" + strconv.Quote(v)
	}
	return "", ""
}

// parse reads text into the field of Values the option sets, by that field's type.
func (o option) parse(into *Values, text string) error {
	f := reflect.ValueOf(into).Elem().Field(o.target)
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

// given resolves what the command line and the environment say, known before git
// runs: a bad value there is a usage error (exit 129). set holds the options that
// were given.
func given(opts *Options, env []string) (v Values, set map[string]bool, err error) {
	v, set = defaults(), map[string]bool{}
	for _, o := range optionTable() {
		if o.target < 0 {
			continue
		}
		text, from := o.explicit(opts, env)
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
func withConfig(v Values, set map[string]bool, cfg map[string]string) (Values, error) {
	for _, o := range optionTable() {
		if err := o.fromConfig(&v, set, cfg); err != nil {
			return v, err
		}
	}
	return v, nil
}

// fromConfig sets the option's value from git config, unless it was set already or
// git config has none.
func (o option) fromConfig(v *Values, set map[string]bool, cfg map[string]string) error {
	if o.target < 0 || o.config == "" || set[o.name] {
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

// fastOptions fills Options from own (as splitArgs returns it) without kong, when
// every option is one of refretry's in a form kong reads the same way. ok is false for
// --help, a missing value, or anything else kong should judge. kong builds its model
// by reflection on every start (about 1.5 ms of CPU, docs/benchmarks.md), which a
// plain update would otherwise pay; TestFastOptionsMatchKong holds the two to the
// same result.
func fastOptions(own []string) (opts *Options, ok bool) {
	opts = &Options{}
	val := reflect.ValueOf(opts).Elem()
	for i := 0; i < len(own); i++ {
		spelling, value, hasValue := strings.Cut(own[i], "=")
		if strings.HasPrefix(own[i], "-C") {
			spelling, hasValue = own[i], false // -C takes the next argument, whatever it is
		}
		o, known := lookup(spelling)
		switch {
		case !known:
			return nil, false
		case o.isBool:
			if hasValue {
				return nil, false
			}
			val.Field(o.index).SetBool(true)
			continue
		}
		if !hasValue {
			if i+1 >= len(own) || strings.HasPrefix(own[i+1], "-") && own[i+1] != "-" {
				return nil, false // kong decides what a value that looks like an option is
			}
			i++
			value = own[i]
		}
		switch f := val.Field(o.index); f.Kind() {
		case reflect.Slice:
			f.Set(reflect.Append(f, reflect.ValueOf(value)))
		default:
			f.SetString(value)
		}
	}
	return opts, true
}

// commands are the words that name a command; any other first argument after
// refretry's options starts update-ref's.
var commands = []string{"update-ref", "version", "push", "fetch", "shim", "gather"}

// splitArgs separates refretry's own options (which come first), the optional command
// word, and the command's arguments (everything from the first other argument on).
func splitArgs(args []string) (own []string, cmdWord string, rest []string) {
	i := 0
scan:
	for ; i < len(args); i++ {
		a := args[i]
		spelling, _, hasValue := strings.Cut(a, "=")
		o, known := lookup(spelling)
		switch {
		case a == "--help":
			own = append(own, a)
		case strings.HasPrefix(a, "-C") && len(a) > 2:
			own = append(own, "-C", a[2:])
		case !known:
			break scan
		case o.isBool:
			if hasValue {
				break scan // not a spelling of refretry's: update-ref's (git rejects it)
			}
			own = append(own, a)
		case hasValue && strings.HasPrefix(a, "--"):
			own = append(own, a)
		case i+1 < len(args):
			own = append(own, a, args[i+1])
			i++
		default:
			own = append(own, a) // kong reports the missing value
		}
	}
	if i < len(args) && slices.Contains(commands, args[i]) {
		cmdWord = args[i]
		i++
	}
	return own, cmdWord, args[i:]
}

// describe adds to each flag's help what Options declares beside it: its environment
// variable, its git config key and its default. It runs once kong has built the model.
func describe(k *kong.Kong) error {
	def := reflect.ValueOf(defaults())
	for _, f := range k.Model.Flags {
		o, ok := lookup("--" + f.Name)
		if !ok || o.envVar == "" {
			continue
		}
		var where []string
		env := "env " + o.envVar
		if o.isBool {
			env += "=1"
		}
		where = append(where, env)
		if c := f.Tag.Get("gitconfig"); c != "" {
			where = append(where, "config "+c)
		}
		about := strings.Join(where, ", ")
		switch d := def.Field(o.target).Interface(); {
		case o.name == "--git":
			about += "; default: git on PATH"
		case o.name == "--pid-grace":
			about += "; default: --stale-after"
		case d != false && d != "":
			about += fmt.Sprintf("; default %v", d)
		}
		f.Help = strings.TrimSuffix(f.Help, ".") + " (" + about + ")."
	}
	return nil
}
