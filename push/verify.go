package push

import (
	"context"
	"strings"
)

// verify reports whether the remote already holds every value refs describe: each
// destination at the object its source names now, and each deleted ref absent. It
// asks the remote with git ls-remote; any failure to find out reads as "no".
func (p *Runner) verify(ctx context.Context, env []string, args Args, url string, refs []RefStatus) bool {
	remote := args.Remote
	if remote == "" {
		remote = url
	}
	if remote == "" || len(refs) == 0 {
		return false
	}
	want := map[string]string{}
	names := []string{"ls-remote", remote}
	for _, s := range refs {
		if s.To == "" || !strings.HasPrefix(s.To, "refs/") {
			return false
		}
		oid := ""
		if s.From != "" {
			out, err := p.command(ctx, env, "rev-parse", "--verify", "-q", s.From).Output()
			if err != nil {
				return false
			}
			oid = strings.TrimSpace(string(out))
		}
		want[s.To] = oid
		names = append(names, s.To)
	}
	out, err := p.command(ctx, env, names...).Output()
	if err != nil {
		return false
	}
	have := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if oid, name, ok := strings.Cut(line, "\t"); ok {
			have[name] = oid
		}
	}
	for ref, oid := range want {
		if have[ref] != oid {
			return false
		}
	}
	return true
}
