package push

import (
	"strings"

	"github.com/refretry/refretry/internal/engine"
)

// optInRebase turns the settings' PushRebase (the job's opt-in: the git shim's
// `git push`, whose command line is git's) into a rebase for this run, at the first
// rejection a rebase would cure, when the caller asked for no cure itself (Rebase,
// Regenerate) and the push can be rebased safely (notRebasable). The settings are
// read then, as every failed run reads them: a run whose first attempt lands reads
// nothing.
func (r *pushRun) optInRebase(a *engine.Attempt) {
	if r.rebase || r.Regenerate != "" || r.optIn {
		return
	}
	r.optIn = true
	s, err := a.Settings()
	if err != nil || !s.PushRebase {
		return
	}
	if why := notRebasable(r.args, r.verdict.report); why != "" {
		a.Note("rebase", "not rebasing "+why+" (pushed once, as git would)")
		return
	}
	r.rebase = true
}

// notRebasable says why a push must not be rebased when the job only opted in
// (settings.PushRebase), "" when it may be: a force push (-f, --force, a +refspec),
// --force-with-lease, --mirror, a deletion (--delete, -d, :ref, --prune), --tags, or a
// tag among the refspecs or among the refs git reported (rep). Rebasing any of them
// would change what the caller asked for: a force push or a lease means "this value,
// whatever the remote holds", a deletion has no commits, and a tag names one commit.
// Options are read wherever they appear before "--", as git's parser reads them.
func notRebasable(args Args, rep Report) string {
	dashdash, remote := false, false
	for i := 0; i < len(args.Raw); i++ {
		a := args.Raw[i]
		switch {
		case !dashdash && a == "--":
			dashdash = true
			continue
		case !dashdash && strings.HasPrefix(a, "-") && a != "-":
			if why := unsafeOption(a); why != "" {
				return why
			}
			if TakesNextArg(a) {
				i++
			}
			continue
		case !remote:
			remote = true // the repository; the rest are refspecs
			continue
		}
		switch src, dst, _ := strings.Cut(a, ":"); {
		case strings.HasPrefix(a, "+"):
			return "a force push (" + a + ")"
		case src == "" && dst != "":
			return "a deletion (" + a + ")"
		case strings.HasPrefix(src, "refs/tags/") || strings.HasPrefix(dst, "refs/tags/"):
			return "a tag (" + a + ")"
		}
	}
	for _, s := range rep.Refs {
		if strings.HasPrefix(s.To, "refs/tags/") {
			return "a push with a tag (" + s.To + ")"
		}
	}
	return ""
}

// unsafeOption is notRebasable's reason for one of git push's options, "" when it
// leaves a push rebasable.
func unsafeOption(arg string) string {
	shorts := gitPush.Shorts(arg)
	switch {
	case strings.Contains(shorts, "f"):
		return "a force push (" + arg + ")"
	case strings.Contains(shorts, "d"):
		return "a deletion (" + arg + ")"
	}
	name, negated, _ := gitPush.Option(arg)
	if negated {
		return ""
	}
	switch name {
	case "force":
		return "a force push (" + arg + ")"
	case "force-with-lease":
		return "a push with a lease (" + arg + ")"
	case "mirror":
		return "a mirror push (" + arg + ")"
	case "delete", "prune":
		return "a push that deletes (" + arg + ")"
	case "tags":
		return "a push of tags (" + arg + ")"
	}
	return ""
}
