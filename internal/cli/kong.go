package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/alecthomas/kong"
)

// newParser is kong's parser for cli, refretry's whole grammar, with its help. A
// grammar kong refuses is refretry's bug: it panics (every test would).
func newParser(cli *CLI, s Streams, exit func(int)) *kong.Kong {
	cli.Options.settings() // the defaults and environment variables help describes
	cli.Push.settings()
	return kong.Must(cli,
		kong.Name("refretry"),
		kong.Description("A drop-in git update-ref that retries lock contention, and only that."),
		kong.Writers(s.Stdout, s.Stderr),
		kong.NoDefaultHelp(),
		kong.Help(help),
		kong.ValueFormatter(describe),
		kong.Exit(exit),
	)
}

// runKong is Run for everything but the plain update: kong reads refretry's options
// (args[:at]) and the command with its arguments; a command word that is missing is
// the default command's (update-ref), and push's and fetch's arguments are git's from
// the first (gitArgs).
func runKong(in *invocation, args []string, at int, word string, complete bool) int {
	var cli CLI
	exited := -1
	parser := newParser(&cli, in.s, func(code int) { exited = code })
	in.opts = &cli.Options
	kctx, err := parser.Parse(kongArgs(args, at, word, complete))
	if exited >= 0 { // --help
		return exited
	}
	if err != nil {
		fmt.Fprintf(in.s.Stderr, "refretry: %v\n", parseError(err))
		return exitUsage
	}
	return exitCode(in.s.Stderr, kctx.Run(in))
}

// parseError is kong's error as refretry says it: a Setting's own message alone, and
// for a command that takes no arguments (version), that it takes none.
func parseError(err error) error {
	var u *usageError
	var perr *kong.ParseError
	if errors.As(err, &u) {
		return u
	}
	if errors.As(err, &perr) && strings.HasPrefix(err.Error(), "unexpected argument") {
		if n := perr.Context.Selected(); n != nil && n.Parent.Type == kong.ApplicationNode && len(n.Positional)+len(n.Children) == 0 {
			return errors.New(n.Name + " takes no arguments")
		}
	}
	return err
}

// kongArgs is args as kong is to read them: the default command named where its
// arguments start, unless refretry's options ask for help; push's and fetch's
// arguments after "--", so that kong takes every one as theirs (gitArgs).
func kongArgs(args []string, at int, word string, complete bool) []string {
	var own []string
	for _, a := range args[:at] {
		if len(a) > 2 && slices.Contains(grammarIndex.valued, a[:2]) {
			// -Cvalue is -C value, whatever value is ("-C=x" names the directory
			// "=x"); a value that looks like an option is kong's to refuse.
			own = append(own, a[:2], a[2:])
		} else {
			own = append(own, a)
		}
	}
	rest := args[at:]
	switch {
	case !complete:
		return own // kong reports the missing value
	case word == "" && slices.Contains(own, "--help"):
		return own
	case word == "" && len(rest) > 0:
		return append(append(own, "update-ref"), rest...)
	case word == "push" || word == "fetch":
		return append(append(own, word, "--"), rest[1:]...)
	}
	return append(own, rest...)
}

// helpFlag is --help; -h is git's (its usage, with the running git's exit code).
type helpFlag bool

// IgnoreDefault: --help alone is refretry's help, not the default command's.
func (helpFlag) IgnoreDefault() {}

// BeforeReset prints the help and exits 0.
func (helpFlag) BeforeReset(ctx *kong.Context) error {
	if err := ctx.PrintUsage(false); err != nil {
		return err
	}
	ctx.Kong.Exit(0)
	return nil
}

// help prints --help: refretry's forms, then kong's description of the options and
// commands; a command's help is kong's alone.
func help(options kong.HelpOptions, ctx *kong.Context) error {
	if ctx.Selected() == nil {
		if _, err := fmt.Fprint(ctx.Stdout, usage(ctx.Model.Node)); err != nil {
			return err
		}
		options.NoAppSummary = true
		if err := kong.DefaultHelpPrinter(options, ctx); err != nil {
			return err
		}
		_, err := fmt.Fprintln(ctx.Stdout, "\nRun \"refretry <command> --help\" for more information on a command.")
		return err
	}
	return kong.DefaultHelpPrinter(options, ctx)
}

// usageForms is refretry's forms, at the top of its --help: the arguments of
// update-ref, push and fetch are git's, which kong's own usage line cannot say. Each
// {form} is that form's options, as PushOptions declares them (usage).
const usageForms = `Usage: refretry [options] <git update-ref arguments>
       refretry [options] update-ref <git update-ref arguments>
       refretry [options] push{push} <git push arguments>
       refretry [options] push{gather} <remote> [<src>:]<branch>
       refretry [options] push{api} <remote> [<src>:]<branch>
       refretry [options] gather list|land|discard [--key-file FILE] <remote> <branch> [<id>...]
       refretry [options] fetch <git fetch arguments>
       refretry version
       refretry shim install|uninstall [--dir DIR]
`

// usage is usageForms with each form's options, from push's flags in the grammar
// (root is the application's node): the one named after the form first and bare
// (--gather), the others in brackets with their placeholder ([--gather-max N]).
func usage(root *kong.Node) string {
	words := map[string]string{}
	for _, f := range commandNode(root, "push").Flags {
		form := f.Tag.Get("form")
		w := "--" + f.Name
		if f.PlaceHolder != "" {
			w += " " + f.PlaceHolder
		}
		if f.Name == form {
			words[form] = " " + w + words[form]
		} else {
			words[form] += " [" + w + "]"
		}
	}
	text := usageForms
	for form, w := range words {
		text = strings.ReplaceAll(text, "{"+form+"}", w)
	}
	return text
}

// commandNode is root's command named name.
func commandNode(root *kong.Node, name string) *kong.Node {
	for _, n := range root.Children {
		if n.Name == name {
			return n
		}
	}
	panic("cli: no command " + name)
}

// describe is an option's help with what the grammar says beside it: its
// environment variable, its git config key and its default.
func describe(v *kong.Value) string {
	env, config, unset, def := about(v)
	var words []string
	if env != "" {
		where := "env " + env
		if config != "" {
			where += ", config " + config
		}
		words = append(words, where)
	}
	switch {
	case unset != "":
		words = append(words, "default: "+unset)
	case def != "":
		words = append(words, "default "+def)
	}
	if len(words) == 0 {
		return v.Help
	}
	return strings.TrimSuffix(v.Help, ".") + " (" + strings.Join(words, "; ") + ")."
}

// about is what the grammar says of a value beside its help, if it is a Setting: its
// environment variable, git config key, what applies when it is unset (in words) and
// its default.
func about(v *kong.Value) (env, config, unset, def string) {
	if !v.Target.CanAddr() {
		return "", "", "", ""
	}
	s, ok := v.Target.Addr().Interface().(setting)
	if !ok {
		return "", "", "", ""
	}
	env, config, def = s.about()
	if unset = v.Tag.Get("unset"); unset != "" {
		def = ""
	}
	return env, config, unset, def
}
