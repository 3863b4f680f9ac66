package cli

import (
	"errors"
	"slices"

	"github.com/refretry/refretry/forge"
	"github.com/refretry/refretry/internal/report"
	"github.com/refretry/refretry/push"
)

// forges are --forge's values.
var forges = []string{"github", "gitea", "gitlab"}

// checkAPI refuses the options that do not go with --api (a usage error): --forge
// without it, a forge it does not know, and the cures and switches of a git push,
// which an API landing has no use for (it replays onto the branch as --rebase does;
// with --gather, a commit that conflicts falls back to --rebase's git push).
func (c *PushCmd) checkAPI() error {
	switch {
	case c.Forge.V != "" && !c.API:
		return &usageError{msg: "push: --forge goes with --api"}
	case c.Forge.V != "" && !slices.Contains(forges, c.Forge.V):
		return &usageError{msg: "push: --forge " + c.Forge.V + ": not github, gitea or gitlab"}
	case c.API && !c.Gather && (c.Regenerate.V != "" || c.NoAtomic):
		return &usageError{msg: "push --api: --regenerate and --no-atomic are git push's; an API landing replays the commits onto the branch as --rebase does"}
	}
	return nil
}

// runAPI is `refretry push --api`: forge.Runner, with git push's arguments rest.
func (c *PushCmd) runAPI(in *invocation, lg *report.Log, rest []string) error {
	r := &forge.Runner{
		Config: in.runnerConfig(lg),
		API:    forge.API{Forge: c.Forge.V},
	}
	res, err := r.Run(in.ctx, rest, nil, in.s.Stdout, lg.Stderr())
	var bad *push.TargetError
	if errors.As(err, &bad) {
		return &usageError{msg: "push --api: " + bad.Error()}
	}
	return ended(lg, res.ExitCode, err, func() report.Refs { return report.Refs{Updates: 1, Names: []string{res.Ref}} })
}

// gatherAPI is the API a gather lands its waves through: nil without --api.
func gatherAPI(api bool, forgeName string) *forge.API {
	if !api {
		return nil
	}
	return &forge.API{Forge: forgeName}
}
