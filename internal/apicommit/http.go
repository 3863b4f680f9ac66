package apicommit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/refretry/refretry/failure"
)

// answer is a forge's answer to one request.
type answer struct {
	kind    Kind
	method  string
	path    string // below the API's root, for messages
	status  int
	header  http.Header
	body    []byte
	message string // the answer's "message" (GitLab's "error"), else its first line
}

// call sends method to path (below the API's root; a full URL for GraphQL) with in
// as its JSON body (nil: none) and decodes a 2xx answer's JSON into out (nil: not
// read). Any other answer is returned with a nil error for the caller to classify;
// the error is a *failure.Error of class Transport when no answer came (a refused
// connection: Refused), or ctx's.
func (e Endpoint) call(ctx context.Context, method, path string, in, out any) (answer, error) {
	a := answer{kind: e.Kind, method: method, path: path}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return a, err
		}
		body = bytes.NewReader(b)
	}
	target := path
	if !strings.Contains(path, "://") {
		target = e.API + path
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return a, err
	}
	e.authorize(req)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "refretry")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if e.requests != nil {
		e.requests.Add(1)
	}
	resp, err := e.HTTP.Do(req)
	if err != nil {
		return a, e.unanswered(ctx, a, err)
	}
	defer resp.Body.Close()
	a.status, a.header = resp.StatusCode, resp.Header
	a.body, err = io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return a, e.unanswered(ctx, a, err)
	}
	a.message = messageOf(a.body)
	if a.status/100 == 2 && out != nil {
		if err := json.Unmarshal(a.body, out); err != nil {
			return a, &failure.Error{Command: "push", Class: failure.Other, ExitCode: 128,
				Message: fmt.Sprintf("%s API: %s %s: %d with an answer that is not the JSON expected: %v", e.Kind, method, path, a.status, err)}
		}
	}
	return a, nil
}

// authorize puts the token where the forge reads it. It goes nowhere else.
func (e Endpoint) authorize(req *http.Request) {
	switch {
	case e.Kind == GitLab && e.Job:
		req.Header.Set("JOB-TOKEN", e.Token)
	case e.Kind == GitLab:
		req.Header.Set("PRIVATE-TOKEN", e.Token)
	case e.Kind == Gitea:
		req.Header.Set("Authorization", "token "+e.Token)
	default:
		req.Header.Set("Authorization", "Bearer "+e.Token)
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
	}
}

// unanswered is a request that got no answer (err): the caller's context ended, or
// the transport failed (a transport failure; the request may have been applied).
func (e Endpoint) unanswered(ctx context.Context, a answer, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	f := &failure.Error{Command: "push", Class: failure.Transport, ExitCode: 128,
		Message: fmt.Sprintf("%s API: %s %s: no answer: %v", e.Kind, a.method, a.path, unwrapURL(err))}
	f.Refused = errors.Is(err, syscall.ECONNREFUSED)
	return f
}

// unwrapURL is err without net/http's "Post <url>:" prefix (the URL is said apart).
func unwrapURL(err error) error {
	var u *url.Error
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}

// messageOf is what an answer's body says: its JSON "message" (GitHub, Gitea,
// GitLab's errors) or "error" (GitLab's validation), else its first line.
func messageOf(body []byte) string {
	var m struct {
		Message any    `json:"message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal(body, &m) == nil {
		switch v := m.Message.(type) {
		case string:
			return v
		case nil:
		default: // GitLab's validation answers {"message": {"field": ["..."]}}
			b, _ := json.Marshal(v)
			return string(b)
		}
		if m.Error != "" {
			return m.Error
		}
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	return line
}

// fail is a as a failure of class c: the forge, the request, the status and its
// message.
func (a answer) fail(c failure.Class) *failure.Error {
	code := 128
	switch c {
	case failure.Behind, failure.Rejected, failure.Declined:
		code = 1 // as git push's for a rejected ref
	}
	msg := a.message
	if msg == "" {
		msg = http.StatusText(a.status)
	}
	return &failure.Error{Command: "push", Class: c, ExitCode: code,
		Message: fmt.Sprintf("%s API: %s %s: %d %s", a.kind, a.method, a.path, a.status, oneLine(msg))}
}

// oneLine is s's lines joined, without blank ones.
func oneLine(s string) string { return strings.Join(policyLines(s), " / ") }

// common classifies what every forge answers alike: a limit (429, or a 403 that
// says to wait: Retry-After, or no requests left until x-ratelimit-reset), a
// server error (5xx: the request may have been applied), credentials (401),
// something missing (404). nil for anything else.
func (a answer) common(now time.Time) *failure.Error {
	if wait, limited := a.limit(now); limited {
		f := a.fail(failure.Transport)
		f.Wait = wait
		return f
	}
	switch {
	case a.status >= 500:
		return a.fail(failure.Unknown)
	case a.status == http.StatusUnauthorized:
		return a.fail(failure.Auth)
	case a.status == http.StatusNotFound:
		return a.fail(failure.NotFound)
	}
	return nil
}

// abuseWait is how long to wait after a secondary limit that names no time (GitHub's
// "abuse" answer): its documentation asks for at least a minute.
const abuseWait = time.Minute

// limit reports whether a is a rate limit, and how long it asks to wait (0 when it
// does not say): Retry-After (seconds or a date), else, with no requests left,
// x-ratelimit-reset or GitLab's RateLimit-Reset (a Unix time); GitHub's secondary
// limit without either waits abuseWait.
func (a answer) limit(now time.Time) (time.Duration, bool) {
	if a.status != http.StatusTooManyRequests && a.status != http.StatusForbidden {
		return 0, false
	}
	if v := a.header.Get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return time.Duration(s) * time.Second, true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	for _, h := range [][2]string{{"x-ratelimit-remaining", "x-ratelimit-reset"}, {"RateLimit-Remaining", "RateLimit-Reset"}} {
		if a.header.Get(h[0]) != "0" {
			continue
		}
		if reset, err := strconv.ParseInt(a.header.Get(h[1]), 10, 64); err == nil {
			return max(time.Unix(reset, 0).Sub(now), 0) + time.Second, true
		}
	}
	lower := strings.ToLower(a.message)
	if a.status == http.StatusForbidden && (strings.Contains(lower, "secondary rate limit") || strings.Contains(lower, "abuse")) {
		return abuseWait, true
	}
	return 0, a.status == http.StatusTooManyRequests
}

// rest is what an answer no forge's own words explained means: common's classes;
// else a 403 is a token that may not do this (auth), any other 4xx a request the
// forge refused (rejected), anything else other.
func (a answer) rest(now time.Time) *failure.Error {
	if f := a.common(now); f != nil {
		return f
	}
	if a.status == http.StatusForbidden {
		return a.fail(failure.Auth)
	}
	if a.status/100 == 4 {
		return a.fail(failure.Rejected)
	}
	return a.fail(failure.Other)
}
