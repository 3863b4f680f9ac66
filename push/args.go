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
		case arg == "-q" || arg == "--quiet":
			a.Quiet = true
		case arg == "-v" || arg == "--verbose":
			a.Verbose = true
		case strings.HasPrefix(arg, "-") && !strings.HasPrefix(arg, "--") && len(arg) > 2:
			// A cluster of short options: -vq, -fo<value>, …
			for j := 1; j < len(arg); j++ {
				switch arg[j] {
				case 'q':
					a.Quiet = true
				case 'v':
					a.Verbose = true
				case 'o':
					if j == len(arg)-1 {
						i++ // -fo <value>
					}
					j = len(arg)
				}
			}
		}
	}
	return a
}
