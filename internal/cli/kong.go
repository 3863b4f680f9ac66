package cli

import (
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/refretry/refretry/internal/report"
)

// runKong is Run for what only kong reads: refretry's options when readLine left them
// to kong (which then prints its help or its usage error), the arguments of a command
// whose grammar is kong's (shim, gather), and the request for a command's --help.
func runKong(in *invocation, l line) int {
	var cli CLI
	exited := -1
	parser, err := kong.New(&cli,
		kong.Name("refretry"),
		kong.Description("A drop-in git update-ref that retries lock contention, and only that."),
		kong.Writers(in.s.Stdout, in.s.Stderr),
		kong.Help(help),
		kong.Exit(func(code int) { exited = code }),
		kong.PostBuild(fit),
		kong.Bind(in),
	)
	if err != nil {
		fmt.Fprintf(in.s.Stderr, "refretry: %v\n", err)
		return report.ExitFatal
	}
	kctx, err := parser.Parse(l.kongArgs())
	if exited >= 0 { // --help
		return exited
	}
	if err == nil && !l.read {
		// readLine leaves to kong only what kong rejects or answers with help.
		err = fmt.Errorf("cannot read the options %q", l.own)
	}
	if err != nil {
		fmt.Fprintf(in.s.Stderr, "refretry: %v\n", err)
		return exitUsage
	}
	return exitCode(in.s.Stderr, kctx.Run())
}

// kongArgs is what kong is given: refretry's options if readLine left them to it, the
// command word, and the command's arguments if they are kong's, or --help if they ask
// for it.
func (l line) kongArgs() []string {
	var args []string
	if !l.read {
		args = append(args, l.own...)
	}
	if l.word != "" {
		args = append(args, l.word)
	}
	switch {
	case l.cmd.kongArgs:
		args = append(args, l.rest...)
	case l.cmd.asksHelp(l.rest):
		args = append(args, "--help")
	}
	return args
}

// fit adapts kong's model, once built, to what the declaration says beyond kong's
// tags.
func fit(k *kong.Kong) error {
	// -h is git update-ref's (its usage, with the running git's exit code); refretry's help is --help.
	if k.Model.HelpFlag != nil {
		k.Model.HelpFlag.Short = 0
	}
	// refretry's options are the application's flags; a command's own (push's) are its
	// node's.
	for _, n := range append([]*kong.Node{k.Model.Node}, k.Model.Children...) {
		cmd := ""
		if n != k.Model.Node {
			cmd = n.Name
		}
		for _, f := range n.Flags {
			o, ok := lookup(cmd, "--"+f.Name)
			if !ok {
				continue
			}
			if !o.isBool && !o.isList {
				f.Mapper = textMapper
			}
			describe(f, o)
		}
	}
	return nil
}

// textMapper takes an option's value as kong takes a string, and keeps nothing: kong
// only judges refretry's options (line.go), so its errors are those it gives for a
// string whatever the option's type (push's own it describes and never reads:
// push.go does).
var textMapper = kong.MapperFunc(func(ctx *kong.DecodeContext, _ reflect.Value) error {
	_, err := ctx.Scan.PopValue("string")
	return err
})

// describe adds to a flag's help what the declaration says beside it: its
// environment variable, its git config key and its default.
func describe(f *kong.Flag, o option) {
	env, config, unset, def := o.about()
	var about []string
	if env != "" {
		where := "env " + env
		if config != "" {
			where += ", config " + config
		}
		about = append(about, where)
	}
	switch {
	case unset != "":
		about = append(about, "default: "+unset)
	case def != "":
		about = append(about, "default "+def)
	}
	if len(about) == 0 {
		return
	}
	f.Help = strings.TrimSuffix(f.Help, ".") + " (" + strings.Join(about, "; ") + ")."
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

// usage is usageForms with each form's options: the one named after the form first
// and bare (--gather), the others in brackets with their value's placeholder
// ([--gather-max N]), in the order of their declaration.
func usage() string {
	words := map[string]string{}
	for _, o := range optionTable() {
		if o.form == "" {
			continue
		}
		w := o.name
		if p := o.tag.Get("placeholder"); p != "" {
			w += " " + p
		}
		if o.name == "--"+o.form {
			words[o.form] = " " + w + words[o.form]
		} else {
			words[o.form] += " [" + w + "]"
		}
	}
	text := usageForms
	for form, w := range words {
		text = strings.ReplaceAll(text, "{"+form+"}", w)
	}
	return text
}

// help prints --help: refretry's forms, then kong's description of the options and
// commands; a command's help is kong's alone.
func help(options kong.HelpOptions, ctx *kong.Context) error {
	if ctx.Selected() == nil {
		if _, err := io.WriteString(ctx.Stdout, usage()); err != nil {
			return err
		}
		options.NoAppSummary = true
	}
	return kong.DefaultHelpPrinter(options, ctx)
}
