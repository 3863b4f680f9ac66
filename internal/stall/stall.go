// Package stall sets the floor under which git's HTTP transfers count as stalled:
// libcurl's low-speed limit, given to git through its configuration so that a wedged
// push or fetch fails, and may be retried, instead of hanging until the job times out.
// A floor the caller configured always wins.
package stall

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/environ"
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

// Env returns env with floor f added (the zero Floor means Default), unless the caller
// set one (GIT_HTTP_LOW_SPEED_* in env, or http[.<url>].lowSpeed* in git config, which
// also covers `git -c` and GIT_CONFIG_COUNT) or remote, as given on the command line,
// cannot use HTTP. Asking git config costs one git process; a remote given as a path or
// a non-HTTP URL saves it.
func Env(ctx context.Context, git string, dirs, env []string, remote string, f Floor) []string {
	if !MayUseHTTP(remote) || userFloor(ctx, git, dirs, env) {
		return env
	}
	if f.Limit <= 0 || f.Time <= 0 {
		f = Default
	}
	secs := max(int64(f.Time/time.Second), 1)
	return gitexec.WithConfig(env,
		[2]string{"http.lowSpeedLimit", strconv.Itoa(f.Limit)},
		[2]string{"http.lowSpeedTime", strconv.FormatInt(secs, 10)})
}

// userFloor reports whether the caller configured a low-speed limit or time.
func userFloor(ctx context.Context, git string, dirs, env []string) bool {
	for _, k := range []string{"GIT_HTTP_LOW_SPEED_LIMIT", "GIT_HTTP_LOW_SPEED_TIME"} {
		if environ.Get(env, k) != "" {
			return true
		}
	}
	cmd := gitexec.Command(ctx, git, dirs, env, "config", "--get-regexp", `^http\..*lowspeed(limit|time)$`)
	out, err := cmd.Output()
	return err == nil && len(out) > 0
}

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
