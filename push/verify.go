package push

import (
	"context"
	"strings"
)

// verify reports whether the remote already holds every value refs describe: each
// destination at the object its source names now, and each deleted ref absent. It
// asks the remote with git ls-remote; any failure to find out reads as "no".
func (p *Runner) verify(ctx context.Context, env []string, args Args, url string, refs []RefStatus) bool {
	held, _ := p.check(ctx, env, args, url, refs)
	return held
}

// check is verify, and also returns the destinations the remote does not have at
// all (nil when it could not be asked).
func (p *Runner) check(ctx context.Context, env []string, args Args, url string, refs []RefStatus) (held bool, absent map[string]bool) {
	remote := args.remoteOr(url)
	if remote == "" || len(refs) == 0 {
		return false, nil
	}
	want := map[string]string{}
	names := []string{"ls-remote", remote}
	for _, s := range refs {
		if s.To == "" || !strings.HasPrefix(s.To, "refs/") {
			return false, nil
		}
		oid := ""
		if s.From != "" {
			out, err := p.command(ctx, env, "rev-parse", "--verify", "-q", s.From).Output()
			if err != nil {
				return false, nil
			}
			oid = strings.TrimSpace(string(out))
		}
		want[s.To] = oid
		names = append(names, s.To)
	}
	out, err := p.command(ctx, env, names...).Output()
	if err != nil {
		return false, nil
	}
	have := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if oid, name, ok := strings.Cut(line, "\t"); ok {
			have[name] = oid
		}
	}
	held, absent = true, map[string]bool{}
	for ref, oid := range want {
		held = held && have[ref] == oid
		if have[ref] == "" {
			absent[ref] = true
		}
	}
	return held, absent
}
