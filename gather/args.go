package gather

import (
	"strings"

	"github.com/refretry/refretry/push"
)

// target is what a run's arguments name: git push's options, the remote, the source
// to land and the branch to land it on. List, Land and Discard name a remote and a
// branch alone.
type target struct {
	options []string // git push options, each with its value, given to every push
	remote  string   // a name or a URL, as git push takes it
	source  string   // a commit, a branch, "HEAD"
	branch  string   // "main", or "refs/heads/main"
}

// ArgsError is arguments Run cannot take: after git push's options it takes <remote>
// and one [<src>:]<branch>.
type ArgsError struct {
	// Arg is the operand that is not [<src>:]<branch>; "" when the operands are not
	// two.
	Arg string
}

func (e *ArgsError) Error() string {
	if e.Arg == "" {
		return "takes <remote> [<src>:]<branch>, one branch"
	}
	return e.Arg + " is not [<src>:]<branch>"
}

// readArgs reads git push arguments as Run takes them: options anywhere before "--"
// (with the value of one that takes the next argument, as git push reads it:
// push.TakesNextArg), and two operands, <remote> and [+][<src>:]<branch> (<src>
// HEAD when not given; a branch named in full is under refs/heads/).
func readArgs(args []string) (target, error) {
	var t target
	var operands []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			operands = append(operands, args[i+1:]...)
			i = len(args)
		case strings.HasPrefix(a, "-") && a != "-":
			t.options = append(t.options, a)
			if push.TakesNextArg(a) && i+1 < len(args) {
				i++
				t.options = append(t.options, args[i])
			}
		default:
			operands = append(operands, a)
		}
	}
	if len(operands) != 2 {
		return target{}, &ArgsError{}
	}
	t.remote = operands[0]
	src, branch, ok := strings.Cut(strings.TrimPrefix(operands[1], "+"), ":")
	if !ok {
		src, branch = "HEAD", src
	}
	if src == "" || branch == "" || strings.HasPrefix(branch, "refs/") && !strings.HasPrefix(branch, "refs/heads/") {
		return target{}, &ArgsError{Arg: operands[1]}
	}
	t.source, t.branch = src, strings.TrimPrefix(branch, "refs/heads/")
	return t, nil
}

// plainPush is the arguments of a git push that lands the source on the branch
// without a gather.
func (t target) plainPush() []string {
	return append(append([]string(nil), t.options...), t.remote, t.source+":refs/heads/"+t.branch)
}
