package latency_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/latency"
)

// events is what a test saw, in order: the sleeps, the handler's steps and what
// reached the client's side of the writer.
type events struct {
	mu   sync.Mutex
	list []string
}

func (e *events) add(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, fmt.Sprintf(format, args...))
}

func (e *events) sleep(d time.Duration) { e.add("sleep %v", d) }

func (e *events) got() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

// wire is the server's writer as the test sees it: it records what leaves.
type wire struct {
	*httptest.ResponseRecorder
	ev *events
}

func (w wire) WriteHeader(code int) {
	w.ev.add("header %d", code)
	w.ResponseRecorder.WriteHeader(code)
}

func (w wire) Write(p []byte) (int, error) {
	w.ev.add("body %q", p)
	return w.ResponseRecorder.Write(p)
}

func (w wire) Flush() {
	w.ev.add("flush")
	w.ResponseRecorder.Flush()
}

// TestOrder: half the round trip is spent before the handler sees the request, the
// other half once, before the first thing of the answer leaves; an odd round trip is
// split without losing a nanosecond, and nothing after the first byte waits again.
func TestOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		rtt       time.Duration
		there     time.Duration
		back      time.Duration
		handler   func(ev *events) http.HandlerFunc
		afterBack []string
	}{
		{"header first", 100 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond,
			func(ev *events) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					ev.add("serve %s", r.URL.Path)
					w.WriteHeader(http.StatusAccepted)
					w.Write([]byte("a"))
					w.Write([]byte("b"))
				}
			}, []string{"header 202", `body "a"`, `body "b"`}},
		{"body first, odd trip", 101 * time.Nanosecond, 50 * time.Nanosecond, 51 * time.Nanosecond,
			func(ev *events) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					ev.add("serve %s", r.URL.Path)
					w.Write([]byte("a"))
				}
			}, []string{`body "a"`}},
		{"flush first", 2 * time.Second, time.Second, time.Second,
			func(ev *events) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					ev.add("serve %s", r.URL.Path)
					if err := http.NewResponseController(w).Flush(); err != nil {
						ev.add("flush error %v", err)
					}
					w.Write([]byte("a"))
				}
			}, []string{"flush", `body "a"`}},
		{"nothing written", 10 * time.Millisecond, 5 * time.Millisecond, 5 * time.Millisecond,
			func(ev *events) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) { ev.add("serve %s", r.URL.Path) }
			}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := &events{}
			h := latency.Delay{RoundTrip: tc.rtt, Sleep: ev.sleep}.Wrap(tc.handler(ev))
			h.ServeHTTP(wire{httptest.NewRecorder(), ev}, httptest.NewRequest(http.MethodGet, "/r.git/info/refs", nil))
			want := append([]string{"sleep " + tc.there.String(), "serve /r.git/info/refs", "sleep " + tc.back.String()}, tc.afterBack...)
			if got := ev.got(); !slices.Equal(got, want) {
				t.Errorf("events\n%q\nwant\n%q", got, want)
			}
			if tc.there+tc.back != tc.rtt {
				t.Fatalf("the case's halves %v + %v are not its round trip %v", tc.there, tc.back, tc.rtt)
			}
		})
	}
}

// TestNoDelay: a round trip of 0 or less leaves the handler as it was and sleeps never.
func TestNoDelay(t *testing.T) {
	t.Parallel()
	for _, rtt := range []time.Duration{0, -time.Second} {
		ev := &events{}
		inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ev.add("serve") })
		h := latency.Delay{RoundTrip: rtt, Sleep: ev.sleep}.Wrap(inner)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
		if got := ev.got(); !slices.Equal(got, []string{"serve"}) {
			t.Errorf("round trip %v: events %q, want only the handler's", rtt, got)
		}
	}
}

// TestOverHTTP: through a real server and client, every request of a keep-alive
// connection costs its two halves, in order, and a hijacked connection is closed only
// after the way back.
func TestOverHTTP(t *testing.T) {
	t.Parallel()
	ev := &events{}
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) {
		ev.add("serve %s", r.URL.Path)
		io.WriteString(w, "hello")
	})
	mux.HandleFunc("/hangup", func(w http.ResponseWriter, r *http.Request) {
		ev.add("serve %s", r.URL.Path)
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			ev.add("hijack error %v", err)
			return
		}
		ev.add("close")
		conn.Close()
	})
	srv := httptest.NewServer(latency.Delay{RoundTrip: 40 * time.Millisecond, Sleep: ev.sleep}.Wrap(mux))
	defer srv.Close()
	for range 3 {
		resp, err := srv.Client().Get(srv.URL + "/hello")
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(body) != "hello" {
			t.Fatalf("answer %q, %v", body, err)
		}
	}
	// A POST, which the client does not send again on a new connection.
	if _, err := srv.Client().Post(srv.URL+"/hangup", "text/plain", strings.NewReader("x")); err == nil {
		t.Error("a hung-up request got an answer")
	}
	var want []string
	for range 3 {
		want = append(want, "sleep 20ms", "serve /hello", "sleep 20ms")
	}
	want = append(want, "sleep 20ms", "serve /hangup", "sleep 20ms", "close")
	if got := ev.got(); !slices.Equal(got, want) {
		t.Errorf("events\n%q\nwant\n%q", got, want)
	}
}
