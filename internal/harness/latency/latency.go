// Package latency puts a network's round trip between an HTTP server and its clients,
// for benchmarks that model a forge on another machine. It is test support, not
// product.
//
// The model: every request costs one round trip, RoundTrip, and nothing else of the
// network (no bandwidth limit, no connection set-up). Half of it is spent before the
// server sees the request (its way there), the other half before the first byte of the
// answer leaves (its way back), so what the server changes while answering (a ref a
// push moved) is seen by other clients at the time a real forge would show it, not a
// round trip late. Bytes after the first are not delayed again: on a network they
// follow the first one by the same half trip. A connection the handler takes over
// (hijacks) waits the half trip too, since its closing is what the client sees.
//
// The delay is per request, not per process or per push: a git fetch or push over
// smart HTTP makes several requests (protocol v2: info/refs, ls-refs, fetch; a push:
// info/refs and its receive-pack POST), and a client waits for each answer before it
// sends the next request, as over a real network. Connection set-up (TCP, TLS) would
// add round trips per new connection; they are left out, so the model is a lower bound
// of what a client across a network waits.
package latency

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"time"
)

// Delay is a round trip and the sleep that spends it. The zero value delays nothing.
type Delay struct {
	// RoundTrip is what each request costs; 0 or less makes Wrap return its handler
	// unchanged.
	RoundTrip time.Duration
	// Sleep spends a half trip; nil means time.Sleep. Tests set it to count the calls.
	Sleep func(time.Duration)
}

// Wrap returns next behind the delay: half of RoundTrip before next is called, half
// before the first byte of its answer (header, body, flush or hijack) leaves.
func (d Delay) Wrap(next http.Handler) http.Handler {
	if d.RoundTrip <= 0 {
		return next
	}
	sleep := d.Sleep
	if sleep == nil {
		sleep = time.Sleep
	}
	there := d.RoundTrip / 2
	back := d.RoundTrip - there
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sleep(there)
		lw := &writer{ResponseWriter: w, back: func() { sleep(back) }}
		next.ServeHTTP(lw, r)
		lw.leave() // an answer the handler left to the server (no byte written) travels too
	})
}

// writer spends the way back once, before the first byte of the answer.
type writer struct {
	http.ResponseWriter
	back func()
	once sync.Once
}

func (w *writer) leave() { w.once.Do(w.back) }

func (w *writer) WriteHeader(code int) {
	w.leave()
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(p []byte) (int, error) {
	w.leave()
	return w.ResponseWriter.Write(p)
}

// Flush sends what was written; the handler's stream depends on it.
func (w *writer) Flush() {
	w.leave()
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection over, after the way back.
func (w *writer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.leave()
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap lets http.ResponseController reach the server's own writer.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }
