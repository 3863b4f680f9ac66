package push

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/environ"
	"github.com/refretry/refretry/internal/gitexec"
)

// StallFloor is the slowest transfer git tolerates before giving up, as libcurl's
// low-speed limit: fewer than Limit bytes per second for Time.
type StallFloor struct {
	Limit int           // http.lowSpeedLimit, bytes per second
	Time  time.Duration // http.lowSpeedTime, whole seconds
}

// DefaultStallFloor turns a transfer that moved less than a byte a second for 30
// seconds into a failure. A busy server is well above it: receive-pack sends a
// keep-alive every 5 seconds (receive.keepAlive) while hooks run.
var DefaultStallFloor = StallFloor{Limit: 1, Time: 30 * time.Second}

// userStallFloor reports whether the caller configured a low-speed limit or time:
// GIT_HTTP_LOW_SPEED_* in the environment, or http[.<url>].lowSpeed* in git config,
// which also covers `git -c` (GIT_CONFIG_PARAMETERS) and GIT_CONFIG_COUNT.
func (p *Runner) userStallFloor(ctx context.Context) bool {
	for _, k := range []string{"GIT_HTTP_LOW_SPEED_LIMIT", "GIT_HTTP_LOW_SPEED_TIME"} {
		if environ.Get(p.Env, k) != "" {
			return true
		}
	}
	cmd := gitexec.Command(ctx, p.git(), p.Dirs, p.Env, "config", "--get-regexp", `^http\..*lowspeed(limit|time)$`)
	out, err := cmd.Output()
	return err == nil && len(out) > 0
}

// withStallFloor returns env with the stall floor added, unless the caller set one or
// the remote is given as a URL or path that does not use HTTP (the floor is libcurl's;
// skipping the check saves a git process per push).
func (p *Runner) withStallFloor(ctx context.Context, env []string, remote string) []string {
	if !mayUseHTTP(remote) || p.userStallFloor(ctx) {
		return env
	}
	f := p.StallFloor
	if f.Limit <= 0 || f.Time <= 0 {
		f = DefaultStallFloor
	}
	secs := max(int64(f.Time/time.Second), 1)
	return gitexec.WithConfig(env,
		[2]string{"http.lowSpeedLimit", strconv.Itoa(f.Limit)},
		[2]string{"http.lowSpeedTime", strconv.FormatInt(secs, 10)})
}

// mayUseHTTP reports whether remote may be reached over HTTP: an http(s) URL, or a
// remote name (or nothing, for git's default), whose URL git config decides.
func mayUseHTTP(remote string) bool {
	switch {
	case remote == "":
		return true
	case strings.HasPrefix(remote, "http://") || strings.HasPrefix(remote, "https://"):
		return true
	case strings.Contains(remote, "://"): // file://, ssh://, git://
		return false
	case strings.HasPrefix(remote, "/") || strings.HasPrefix(remote, "."):
		return false // a local path
	case strings.Contains(remote, ":") && !strings.Contains(remote[:strings.Index(remote, ":")], "/"):
		return false // scp-like ssh: host:path
	}
	return true // a remote name
}
