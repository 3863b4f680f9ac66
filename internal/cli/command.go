package cli

import (
	"reflect"
	"slices"
	"sync"
)

// command is a field of CLI that names a command, read once by reflection: the command
// list and how each command takes its arguments come from CLI's declaration alone.
type command struct {
	typ       reflect.Type // UpdateRefCmd
	name      string       // "update-ref"
	isDefault bool         // run when no command is named: refretry <git update-ref arguments>
	// gitArgs: the command's arguments are git's, verbatim, in its field Args (tagged
	// kong:"-": kong never sees them). Otherwise they are kong's to read when the
	// command's struct has fields kong reads (subcommands, flags), and else the command
	// takes none.
	gitArgs, kongArgs bool
}

// commandTable is CLI's commands, in their order of declaration.
var commandTable = sync.OnceValue(func() []command {
	t := reflect.TypeFor[CLI]()
	var table []command
	for i := range t.NumField() {
		f := t.Field(i)
		if _, ok := f.Tag.Lookup("cmd"); !ok {
			continue
		}
		c := command{typ: f.Type, name: f.Tag.Get("name"), isDefault: f.Tag.Get("default") == "1"}
		if c.name == "" {
			panic("cli: command " + f.Name + " has no name tag") // kong would make one its own way
		}
		args, ok := f.Type.FieldByName("Args")
		c.gitArgs = ok && args.Type == reflect.TypeFor[[]string]() && args.Tag.Get("kong") == "-"
		c.kongArgs = !c.gitArgs && readsKong(f.Type)
		table = append(table, c)
	}
	return table
})

// readsKong says whether kong reads anything of a command's struct.
func readsKong(t reflect.Type) bool {
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && f.Tag.Get("kong") != "-" {
			return true
		}
	}
	return false
}

// commandNamed finds the command a word names.
func commandNamed(word string) (command, bool) {
	i := slices.IndexFunc(commandTable(), func(c command) bool { return c.name == word })
	if i < 0 {
		return command{}, false
	}
	return commandTable()[i], true
}

// defaultCommand is the command run when none is named.
func defaultCommand() command {
	i := slices.IndexFunc(commandTable(), func(c command) bool { return c.isDefault })
	return commandTable()[i]
}

// runner is a command's Run.
type runner interface{ Run(*invocation) error }

// direct is the command's Run, with its arguments, when kong need not read them nor
// show the command's help. A --help before any "--" among git's arguments asks for
// refretry's help of the command, but the default command's arguments are git
// update-ref's, --help included.
func (c command) direct(rest []string) (run func(*invocation) error, ok bool) {
	switch {
	case c.kongArgs || c.asksHelp(rest):
		return nil, false
	case !c.gitArgs && len(rest) > 0:
		err := &usageError{c.name + " takes no arguments"}
		return func(*invocation) error { return err }, true
	}
	return c.with(rest).Run, true
}

// asksHelp says whether the arguments ask for the command's help (see direct).
func (c command) asksHelp(rest []string) bool {
	return c.gitArgs && !c.isDefault && slices.Contains(beforeDashDash(rest), "--help")
}

// with is the command with its arguments, if they are git's.
func (c command) with(rest []string) runner {
	v := reflect.New(c.typ)
	if c.gitArgs {
		v.Elem().FieldByName("Args").Set(reflect.ValueOf(rest))
	}
	return v.Interface().(runner)
}

// beforeDashDash is args up to a "--".
func beforeDashDash(args []string) []string {
	if i := slices.Index(args, "--"); i >= 0 {
		return args[:i]
	}
	return args
}
