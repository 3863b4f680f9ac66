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
		case optionsWithValue[a]:
			i++
		case a == "--all" || a == "--mirror" || a == "--tags" || a == "--branches" ||
			a == "--delete" || a == "-d" || a == "--follow-tags" || a == "--prune":
			return nil
		}
	}
	if !seenRemote || len(specs) == 0 {
		return nil
	}
	var plan []RefStatus
	for _, spec := range specs {
		spec = strings.TrimPrefix(spec, "+")
		if strings.HasPrefix(spec, "^") || strings.Contains(spec, "*") {
			return nil
		}
		src, dst, hasDst := strings.Cut(spec, ":")
		if src == "" {
			if !strings.HasPrefix(dst, "refs/") {
				return nil
			}
			plan = append(plan, RefStatus{To: dst})
			continue
		}
		full, err := p.output(ctx, p.Env, "rev-parse", "--symbolic-full-name", src)
		if err != nil || strings.Contains(full, "\n") {
			return nil
		}
		from := src
		if strings.HasPrefix(full, "refs/") {
			from = full
		}
		switch {
		case !hasDst || dst == "":
			if !strings.HasPrefix(full, "refs/") {
				return nil
			}
			dst = full
		case strings.HasPrefix(dst, "refs/"):
		case strings.HasPrefix(full, "refs/heads/"):
			dst = "refs/heads/" + dst
		case strings.HasPrefix(full, "refs/tags/"):
			dst = "refs/tags/" + dst
		default:
			return nil
		}
		plan = append(plan, RefStatus{From: from, To: dst})
	}
	return plan
}
