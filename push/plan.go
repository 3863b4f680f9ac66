package push

import (
	"context"
	"strings"
)

// planFromArgs works out, from the caller's arguments alone, which remote refs the push
// sets and from which local source, for verifying a push whose answer was lost before
// git printed any ref. It reads only explicit refspecs (`src`, `src:dst`, `+src:dst`,
// `:dst`, with full or branch/tag destinations); anything it cannot read with certainty
// (no refspec, wildcards, negative refspecs, --all, --mirror, --tags, --delete, a short
// destination it cannot place) yields nil, and nothing is verified.
func (p *Runner) planFromArgs(ctx context.Context, args Args) []RefStatus {
	specs := refspecsFromArgs(args)
	var plan []RefStatus
	for _, spec := range specs {
		s, ok := p.plannedRef(ctx, spec)
		if !ok {
			return nil
		}
		plan = append(plan, s)
	}
	return plan
}

// pushesMore reports whether the option arg makes git push more, or other, than the
// refspecs say: --all, --mirror, --tags, --branches, --delete (-d, alone or in a
// cluster), --follow-tags, --prune (or a prefix git accepts for one).
func pushesMore(arg string) bool {
	if strings.Contains(gitPush.Shorts(arg), "d") {
		return true
	}
	name, negated, _ := gitPush.Option(arg)
	switch name {
	case "all", "mirror", "tags", "branches", "delete", "follow-tags", "prune":
		return !negated
	}
	return false
}

// refspecsFromArgs picks the refspecs out of the push's arguments: those after the
// remote's name. It returns nil when there are none, when the remote is not named,
// or when an option pushes refs that no refspec lists (--all, --tags, …) or deletes.
func refspecsFromArgs(args Args) []string {
	var specs []string
	seenRemote, dashdash := false, false
	raw := args.Raw
	for i := 0; i < len(raw); i++ {
		a := raw[i]
		switch {
		case dashdash || (!strings.HasPrefix(a, "-") || a == "-"):
			if !seenRemote && args.Remote != "" && a == args.Remote {
				seenRemote = true
				continue
			}
			specs = append(specs, a)
		case a == "--":
			dashdash = true
		case pushesMore(a):
			return nil
		case TakesNextArg(a):
			i++
		}
	}
	if !seenRemote {
		return nil
	}
	return specs
}

// plannedRef reads one explicit refspec: the remote ref it sets and the local source,
// by its full name when it has one. ok is false when the refspec cannot be read with
// certainty.
func (p *Runner) plannedRef(ctx context.Context, spec string) (s RefStatus, ok bool) {
	spec = strings.TrimPrefix(spec, "+")
	if strings.HasPrefix(spec, "^") || strings.Contains(spec, "*") {
		return RefStatus{}, false
	}
	src, dst, hasDst := strings.Cut(spec, ":")
	if src == "" {
		return RefStatus{To: dst}, strings.HasPrefix(dst, "refs/")
	}
	full, err := p.output(ctx, p.Env, "rev-parse", "--symbolic-full-name", src)
	if err != nil || strings.Contains(full, "\n") {
		return RefStatus{}, false
	}
	from := src
	if strings.HasPrefix(full, "refs/") {
		from = full
	}
	dst, ok = destination(full, dst, hasDst)
	return RefStatus{From: from, To: dst}, ok
}

// destination places a refspec's destination dst (empty or missing when hasDst is
// false) given its source's full name: a full destination as it is, none as the
// source's own name, a short one beside the source (a branch among branches, a tag
// among tags). ok is false when it cannot be placed.
func destination(full, dst string, hasDst bool) (string, bool) {
	switch {
	case !hasDst || dst == "":
		return full, strings.HasPrefix(full, "refs/")
	case strings.HasPrefix(dst, "refs/"):
		return dst, true
	case strings.HasPrefix(full, "refs/heads/"):
		return "refs/heads/" + dst, true
	case strings.HasPrefix(full, "refs/tags/"):
		return "refs/tags/" + dst, true
	}
	return "", false
}
