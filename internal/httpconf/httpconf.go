// Package httpconf gives git the HTTP settings refretry relies on, unless the caller
// configured them:
//
//   - a stall floor, libcurl's low-speed limit, so that a wedged push or fetch fails,
//     and may be retried, instead of hanging until the job times out;
//   - with git 2.54 or later, git's own handling of HTTP 429 (http.maxRetries), so
//     that a rate limiter's Retry-After is waited for within an attempt, for no longer
//     than the time refretry has left (http.maxRetryTime).
//
// A setting the caller made (in the environment, in git config, through `git -c` or
// GIT_CONFIG_*) always wins. A remote that cannot use HTTP is left alone.
package httpconf

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
)

// Floor is the slowest transfer git tolerates before giving up, as libcurl's low-speed
// limit: fewer than Limit bytes per second for Time.
type Floor struct {
	Limit int           // http.lowSpeedLimit, bytes per second
	Time  time.Duration // http.lowSpeedTime, whole seconds
}

// Default turns a transfer that moved less than a byte a second for 30 seconds into a
// failure. A busy server is well above it: receive-pack sends a keep-alive every 5
// seconds (receive.keepAlive) while hooks run, and upload-pack sends progress or
// keep-alive packets while it counts and compresses objects.
var Default = Floor{Limit: 1, Time: 30 * time.Second}

// RateLimitRetries is how many times git 2.54+ asks again after an HTTP 429 within one
// attempt (http.maxRetries counts the first request): each wait is the server's
// Retry-After.
const RateLimitRetries = 3

// Settings are what refretry adds for one command's remote: see Env and Attempt.
type Settings struct {
	floor     bool // add the stall floor: HTTP may be used and the caller set none
	rateLimit bool // add the 429 settings: the same, and git is 2.54 or later
	f         Floor
}

// Look decides, once per command, what refretry adds for remote (as given on the
// command line). Asking git config costs one git process, and the 429 settings one
// more (`git version`); a remote given as a path or a non-HTTP URL saves both.
func Look(ctx context.Context, git string, dirs, env []string, remote string, f Floor) Settings {
	if !MayUseHTTP(remote) {
		return Settings{}
	}
	if f.Limit <= 0 || f.Time <= 0 {
		f = Default
	}
	floorSet, retriesSet := userSettings(ctx, git, dirs, env)
	return Settings{
		floor:     !floorSet,
		rateLimit: !retriesSet && gitexec.AtLeast(gitexec.Version(ctx, git, env), 2, 54),
		f:         f,
	}
}

// RateLimited reports whether git waits on a 429's Retry-After itself.
func (s Settings) RateLimited() bool { return s.rateLimit }

// Env returns env with the stall floor added, when Look decided so.
func (s Settings) Env(env []string) []string {
	if !s.floor {
		return env
	}
	secs := max(int64(s.f.Time/time.Second), 1)
	return gitexec.WithConfig(env,
		[2]string{"http.lowSpeedLimit", strconv.Itoa(s.f.Limit)},
		[2]string{"http.lowSpeedTime", strconv.FormatInt(secs, 10)})
}

// Attempt returns env for one attempt that has left to run: with git's 429 handling,
// waiting at most left (in whole seconds, at least one) on a server's Retry-After; a
// longer wait the server asks for fails the attempt at once, and git says how long
// it was. left <= 0 means no bound is known, and git's own (300 s) applies.
func (s Settings) Attempt(env []string, left time.Duration) []string {
	if !s.rateLimit {
		return env
	}
	kv := [][2]string{{"http.maxRetries", strconv.Itoa(RateLimitRetries)}}
	if left > 0 {
		kv = append(kv, [2]string{"http.maxRetryTime", strconv.FormatInt(max(int64(left/time.Second), 1), 10)})
	}
	return gitexec.WithConfig(env, kv...)
}

// userSettings reports whether the caller set a low-speed limit or time, and whether
// they set any of git's 429 settings. git config is read once per process for one git,
// directories and environment: a gather asks for its own git commands and again for
// its staging push, and the answer cannot change within a run.
func userSettings(ctx context.Context, git string, dirs, env []string) (floor, retries bool) {
	key := git + "\x00" + strings.Join(dirs, "\x00") + "\x01" + strings.Join(env, "\x00")
	if v, ok := asked.Load(key); ok {
		r := v.([2]bool)
		return r[0], r[1]
	}
	defer func() { asked.Store(key, [2]bool{floor, retries}) }()
	for _, k := range []string{"GIT_HTTP_LOW_SPEED_LIMIT", "GIT_HTTP_LOW_SPEED_TIME"} {
		floor = floor || gitexec.Getenv(env, k) != ""
	}
	for _, k := range []string{"GIT_HTTP_MAX_RETRIES", "GIT_HTTP_RETRY_AFTER", "GIT_HTTP_MAX_RETRY_TIME"} {
		retries = retries || gitexec.Getenv(env, k) != ""
	}
	cmd := gitexec.Command(ctx, git, dirs, env, "config", "--name-only", "--get-regexp",
		`^http\..*(lowspeed(limit|time)|maxretries|retryafter|maxretrytime)$`)
	out, _ := cmd.Output()
	for name := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		switch {
		case strings.HasSuffix(name, "lowspeedlimit"), strings.HasSuffix(name, "lowspeedtime"):
			floor = true
		case name != "":
			retries = true
		}
	}
	return floor, retries
}

// asked are the answers of userSettings, by its arguments.
var asked sync.Map

// MayUseHTTP reports whether remote may be reached over HTTP: an http(s) URL, or a
// remote name (or nothing, for git's default), whose URL git config decides.
func MayUseHTTP(remote string) bool {
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
