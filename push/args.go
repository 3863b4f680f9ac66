package push

import "strings"

// Args is what the package needs to know about the caller's git push arguments. They
// are passed to git verbatim; Args only reads them.
type Args struct {
	Raw []string
	// Remote is the <repository> argument (or --repo's value); "" when git push is to
	// pick the remote itself.
	Remote string
	// Porcelain, Quiet and Verbose are the caller's own output options.
	Porcelain bool
	Quiet     bool
	Verbose   bool
	// Atomic records --atomic or --no-atomic given by the caller (the last one wins);
	// nil when neither was.
	Atomic *bool
}

// optionsWithValue are git push's options that take their value as the next argument.
var optionsWithValue = map[string]bool{
	"-o": true, "--push-option": true, "--receive-pack": true, "--exec": true, "--repo": true,
}

// TakesNextArg reports whether git push reads the argument after arg as arg's value:
// -o, --push-option, --receive-pack, --exec and --repo given without "=", and a
// cluster of short options that ends in o (-fo <value>).
func TakesNextArg(arg string) bool {
	if optionsWithValue[arg] {
		return true
	}
	flags := shortFlags(arg)
	return len(flags) == len(arg)-1 && strings.HasSuffix(flags, "o")
}

// shortFlags is the option letters of a cluster of short options ("-fu" → "fu"), up
// to the first o, whose value is the rest of the argument or the next one
// ("-fofoo" → "fo"); "" when arg is not one.
func shortFlags(arg string) string {
	if len(arg) < 2 || arg[0] != '-' || arg[1] == '-' {
		return ""
	}
	if i := strings.IndexByte(arg, 'o'); i > 0 {
		return arg[1 : i+1]
	}
	return arg[1:]
}

// ParseArgs reads git push arguments as far as the package needs them.
func ParseArgs(args []string) Args {
	a := Args{Raw: args}
	set := func(v bool) { a.Atomic = &v }
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			if i+1 < len(args) && a.Remote == "" {
				a.Remote = args[i+1]
			}
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			if a.Remote == "" {
				a.Remote = arg
			}
			break // the rest are refspecs
		}
		name, value, hasValue := strings.Cut(arg, "=")
		switch {
		case name == "--repo" && hasValue:
			a.Remote = value
		case optionsWithValue[arg]:
			if arg == "--repo" && i+1 < len(args) {
				a.Remote = args[i+1]
			}
			i++
		case arg == "--porcelain":
			a.Porcelain = true
		case arg == "--atomic":
			set(true)
		case arg == "--no-atomic":
			set(false)
		case arg == "--quiet":
			a.Quiet = true
		case arg == "--verbose":
			a.Verbose = true
		case shortFlags(arg) != "":
			a.Quiet = a.Quiet || strings.Contains(shortFlags(arg), "q")
			a.Verbose = a.Verbose || strings.Contains(shortFlags(arg), "v")
			if TakesNextArg(arg) {
				i++
			}
		}
	}
	return a
}
