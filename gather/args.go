package gather

import (
	"errors"

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

func (e *ArgsError) Error() string { return (&push.TargetError{Arg: e.Arg}).Error() }

// readArgs reads git push arguments as Run takes them (push.ReadTarget).
func readArgs(args []string) (target, error) {
	t, err := push.ReadTarget(args)
	if te := (*push.TargetError)(nil); errors.As(err, &te) {
		return target{}, &ArgsError{Arg: te.Arg}
	}
	return target{options: t.Options, remote: t.Remote, source: t.Source, branch: t.Branch}, err
}

// plainPush is the arguments of a git push that lands the source on the branch
// without a gather.
func (t target) plainPush() []string {
	return append(append([]string(nil), t.options...), t.remote, t.source+":refs/heads/"+t.branch)
}
