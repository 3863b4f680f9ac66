// Package cliopts is what the refretry command tells a transaction.Runner about one
// run besides the Runner's public fields: knobs that only a command line needs (its
// signal handling, its summary's ref count, a repository it has found already). They
// travel in the run's context, so that the library's types do not carry them.
package cliopts

import (
	"context"

	"github.com/refretry/refretry/internal/repo"
)

// UpdateRef is the refretry command's part of one transaction.Runner.Run.
type UpdateRef struct {
	// GitDir and CommonDir are the repository's directories, found already
	// (internal/repo); "" means the Runner looks for them itself when it needs them.
	GitDir, CommonDir string
	// Store is where git keeps the repository's refs, found already; the zero Store
	// means the Runner looks for it itself when it needs it.
	Store repo.Store
	// CountRefs makes a --stdin run count the updates of its input for its Result (a
	// regular file is then read once more, at the end).
	CountRefs bool
	// BeforeWait, if set, is called (once) before the run first waits for something
	// other than a single git attempt: a retry, a place in the line, a --stdin session
	// or a git run with the caller's streams. The command sets up its signal handling
	// there, so that an update that needs one git pays nothing for it.
	BeforeWait func()
}

type updateRefKey struct{}

// WithUpdateRef is ctx carrying o to the transaction.Runner.Run it is given to.
func WithUpdateRef(ctx context.Context, o UpdateRef) context.Context {
	return context.WithValue(ctx, updateRefKey{}, o)
}

// UpdateRefOf is what ctx carries; the zero UpdateRef when it carries nothing.
func UpdateRefOf(ctx context.Context) UpdateRef {
	o, _ := ctx.Value(updateRefKey{}).(UpdateRef)
	return o
}
