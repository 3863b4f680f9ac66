package gitmsg

import (
	"testing"
	"time"
)

func TestReadTransport(t *testing.T) {
	cases := []struct {
		stderr string
		want   Transport
	}{
		{"fatal: unable to access 'http://h/r.git/': The requested URL returned error: 503\n",
			Transport{Line: "fatal: unable to access 'http://h/r.git/': The requested URL returned error: 503", HTTPStatus: 503}},
		{"fatal: unable to access 'http://h/r.git/': The requested URL returned error: 401\n", Transport{Auth: true}},
		{"fatal: unable to access 'http://h/r.git/': The requested URL returned error: 404\n", Transport{}},
		{"fatal: could not read Username for 'http://h': terminal prompts disabled\n", Transport{Auth: true}},
		{"remote: Permission to o/r.git denied to u.\nfatal: the remote end hung up unexpectedly\n", Transport{Auth: true}},
		{"fatal: the remote end hung up unexpectedly\n", Transport{Line: "fatal: the remote end hung up unexpectedly"}},
		{"remote: Connection refused\nfatal: bad\n", Transport{}},
		{"fatal: unable to connect to 127.0.0.1:\n127.0.0.1[0: 127.0.0.1]: errno=Connection refused\n\n",
			Transport{Line: "fatal: unable to connect to 127.0.0.1:", Refused: true}},
		// git 2.55 pushing to a port nothing listens on (captured), over http(s) and ssh.
		{"fatal: unable to access 'http://127.0.0.1:9/x.git/': Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server\n",
			Transport{Line: "fatal: unable to access 'http://127.0.0.1:9/x.git/': Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server", Refused: true}},
		{"ssh: connect to host 127.0.0.1 port 9: Connection refused\nfatal: Could not read from remote repository.\n\nPlease make sure you have the correct access rights\nand the repository exists.\n",
			Transport{Line: "ssh: connect to host 127.0.0.1 port 9: Connection refused", Refused: true}},
		// A connection that timed out (libcurl's words) may have met a server too busy to answer: not Refused.
		{"fatal: unable to access 'https://h/r.git/': Failed to connect to h port 443 after 130 ms: Connection timed out\n",
			Transport{Line: "fatal: unable to access 'https://h/r.git/': Failed to connect to h port 443 after 130 ms: Connection timed out"}},
		{"error: RPC failed; HTTP 429 curl 22 The requested URL returned error: 429\nfatal: expected flush after ref listing\n",
			Transport{Line: "error: RPC failed; HTTP 429 curl 22 The requested URL returned error: 429", HTTPStatus: 429}},
		// git 2.55 against a server answering 429 with Retry-After: 2 (captured):
		// http.maxRetries ran out, or the wait was longer than http.maxRetryTime.
		{"warning: rate limited, waiting 2 seconds before retry\nfatal: rate limited by 'http://127.0.0.1:38999/r.git/', please try again in 2 seconds\n",
			Transport{Line: "fatal: rate limited by 'http://127.0.0.1:38999/r.git/', please try again in 2 seconds", HTTPStatus: 429, RetryAfter: 2 * time.Second}},
		{"error: response requested a delay greater than http.maxRetryTime (20 > 1 seconds)\nfatal: unable to access 'http://127.0.0.1:38999/r.git/': The requested URL returned error: 429\n",
			Transport{Line: "error: response requested a delay greater than http.maxRetryTime (20 > 1 seconds)", HTTPStatus: 429, RetryAfter: 20 * time.Second}},
		{"fatal: rate limited by 'http://h/r.git/', please try again later\n",
			Transport{Line: "fatal: rate limited by 'http://h/r.git/', please try again later", HTTPStatus: 429}},
	}
	for _, tc := range cases {
		if got := ReadTransport([]byte(tc.stderr)); got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.stderr, got, tc.want)
		}
	}
}

func TestUnsupported(t *testing.T) {
	atomic := "fatal: the receiving end does not support --atomic push\nfatal: the remote end hung up unexpectedly\n"
	if line, ok := Unsupported([]byte(atomic)); !ok || line != "fatal: the receiving end does not support --atomic push" {
		t.Errorf("atomic refusal: %q %v", line, ok)
	}
	if _, ok := Unsupported([]byte("fatal: the remote end hung up unexpectedly\nfatal: the receiving end does not support --atomic push\n")); ok {
		t.Error("a refusal after the first fatal line decided")
	}
	if _, ok := Unsupported([]byte("error: failed to push some refs\n")); ok {
		t.Error("no fatal line, yet unsupported")
	}
}
