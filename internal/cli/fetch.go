package cli

import (
	"github.com/refretry/refretry/fetch"
	"github.com/refretry/refretry/internal/report"
)

// FetchCmd runs git fetch with the caller's arguments, retrying local lock
// contention, refs moved by a concurrent fetch, and transport failures (package
// fetch). It has no options of its own: every argument is git fetch's.
type FetchCmd struct {
	// Args are git fetch's arguments, verbatim (gitArgs).
	Args gitArgs `arg:"" optional:"" passthrough:"all" help:"git fetch's arguments."`
	// GitArgs are git's global options other than -C (the shim's `git -c k=v fetch`),
	// passed on before fetch; see shim.go.
	GitArgs []string `kong:"-"`
}

// Run runs the fetch.
func (c *FetchCmd) Run(in *invocation) error {
	if err := in.check(); err != nil {
		return err
	}
	lg := in.log("fetch")
	f := &fetch.Runner{
		Config:     in.runnerConfig(lg),
		GlobalArgs: c.GitArgs,
	}
	res, err := f.Run(in.ctx, c.Args, in.s.Stdin, in.s.Stdout, lg.Stderr())
	return ended(lg, res.ExitCode, err, func() report.Refs { return report.Refs{Updates: -1} })
}
