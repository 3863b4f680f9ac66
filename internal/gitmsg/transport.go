package gitmsg

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// transportSigns are git's and libcurl's words for a connection that failed or broke:
// another identical attempt may get through.
var transportSigns = []string{
	"the remote end hung up unexpectedly",
	"Connection reset by peer",
	"Connection refused",
	"unable to connect to ", // git:// and ssh's proxy: "fatal: unable to connect to <host>:", the reason on the next line
	"Couldn't connect to server",
	"Failed to connect to ",
	"Connection timed out",
	"Operation too slow",
	"Operation timed out",
	"Empty reply from server",
	"Recv failure",
	"Send failure",
	"transfer closed with outstanding read data remaining",
	"unexpected disconnect while reading sideband packet",
	"early EOF",
	"RPC failed",
}

// refusedSigns are git's and libcurl's words for a connection nothing accepted:
// no server listens at that address (yet, or at all).
var refusedSigns = []string{
	"Connection refused",         // ssh, git://, older libcurl
	"Couldn't connect to server", // libcurl 7.80+: "Failed to connect to <host> port <n> after 0 ms: Couldn't connect to server"
}

// authSigns are authentication and permission failures: never retried.
var authSigns = []string{
	"Authentication failed for ",
	"could not read Username",
	"could not read Password",
	"terminal prompts disabled",
	"Permission denied",
	"HTTP Basic: Access denied",
}

// Transport is what git's own stderr lines (not the server's remote: lines, except
// for a hosting service's permission message) say about the connection.
type Transport struct {
	// Auth is set for an authentication or permission failure, which wins over
	// anything else: never retried.
	Auth bool
	// Line is the first line naming a failure another attempt may get past (a
	// connection refused, reset or stalled, an HTTP 5xx, 408 or 429); "" for none.
	Line string
	// Refused is set when that line says nothing accepted the connection (see
	// refusedSigns): the attempt never reached a server.
	Refused bool
	// HTTPStatus is that line's HTTP status, 0 when it names none.
	HTTPStatus int
	// RetryAfter is how long the server asked to wait before the next request (its
	// Retry-After on a 429, as git 2.54+ reports it when it did not wait itself); 0
	// when git did not say.
	RetryAfter time.Duration
}

// git 2.54+'s words for a 429 it did not get past (http.c, remote-curl.c): its
// retries ran out, or the server asked for a longer wait than http.maxRetryTime.
var (
	reRateLimited = LazyRegexp(`rate limited by '[^']*', please try again (?:in (\d+) seconds|later)`)
	reTooLongWait = LazyRegexp(`response requested a delay greater than http\.maxRetryTime \((\d+) > \d+ seconds\)`)
)

// retryAfter reads the wait a 429 asked for from one of git's lines; ok is true when
// the line reports a 429 at all.
func retryAfter(line string) (wait time.Duration, ok bool) {
	for _, re := range []*regexp.Regexp{reRateLimited(), reTooLongWait()} {
		if m := re.FindStringSubmatch(line); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil {
				wait = time.Duration(n) * time.Second
			}
			return wait, true
		}
	}
	return 0, false
}

// ReadTransport reads stderr for a transport failure. An HTTP status that retrying
// cannot change (404 and the like) ends the search with nothing found.
func ReadTransport(stderr []byte) Transport {
	var t Transport
	lines := strings.Split(string(stderr), "\n")
	for i, line := range lines {
		next := ""
		if i+1 < len(lines) {
			next = lines[i+1]
		}
		if strings.HasPrefix(line, "remote:") {
			if strings.Contains(line, "Permission to ") && strings.Contains(line, " denied") {
				return Transport{Auth: true}
			}
			continue
		}
		if wait, ok := retryAfter(line); ok {
			t.RetryAfter = max(t.RetryAfter, wait)
			if t.Line == "" {
				t.Line, t.HTTPStatus = line, 429
			}
			continue
		}
		if code := httpStatus(line); code != 0 {
			switch {
			case code == 401 || code == 403:
				return Transport{Auth: true}
			case code >= 500 || code == 429 || code == 408:
				if t.Line == "" {
					t.Line, t.HTTPStatus = line, code
				}
				continue
			default:
				return Transport{}
			}
		}
		if ContainsAny(line, authSigns) {
			return Transport{Auth: true}
		}
		if t.Line == "" && ContainsAny(line, transportSigns) {
			t.Line = line
			// git://'s reason follows the line that names the failure:
			// "fatal: unable to connect to <host>:" then "<host>[0: <ip>]: errno=Connection refused".
			t.Refused = ContainsAny(line, refusedSigns) || ContainsAny(next, refusedSigns)
		}
	}
	return t
}

// ContainsAny reports whether s contains any of signs.
func ContainsAny(s string, signs []string) bool {
	for _, sign := range signs {
		if strings.Contains(s, sign) {
			return true
		}
	}
	return false
}

// httpStatus returns the HTTP status a git or libcurl message reports, or 0.
func httpStatus(line string) int {
	for _, marker := range []string{"RPC failed; HTTP ", "The requested URL returned error: "} {
		i := strings.Index(line, marker)
		if i < 0 {
			continue
		}
		rest := line[i+len(marker):]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if code, err := strconv.Atoi(rest[:n]); err == nil {
			return code
		}
	}
	return 0
}

// Unsupported returns git's line saying that the other side lacks a capability the
// command asked for ("the receiving end does not support --atomic push", push
// options, signed pushes), when that is the first fatal: line: it decides, whatever
// git prints after it (usually "the remote end hung up unexpectedly"), and no retry
// changes it.
func Unsupported(stderr []byte) (string, bool) {
	for _, line := range Lines(stderr) {
		msg, ok := strings.CutPrefix(line, "fatal: ")
		if !ok {
			continue
		}
		if strings.HasPrefix(msg, "the receiving end does not support ") {
			return line, true
		}
		return "", false
	}
	return "", false
}
