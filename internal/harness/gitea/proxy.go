package gitea

import (
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/refretry/refretry/internal/harness/latency"
)

// holdLimit bounds how long HoldPushes keeps a POST waiting for the others.
const holdLimit = 2 * time.Minute

// proxy is the counting reverse proxy in front of Gitea.
type proxy struct {
	srv         *http.Server
	rp          *httputil.ReverseProxy
	requests    atomic.Int64
	pushes      atomic.Int64
	uploadPacks atomic.Int64
	closed      chan struct{}

	mu   sync.Mutex
	gate *gate
}

// gate holds POSTs until want of them have arrived.
type gate struct {
	want, arrived int
	open          chan struct{}
}

// newProxy serves ln, passing every request on to target through transport after
// delay's way there, and its answer back after delay's way back.
func newProxy(ln net.Listener, target *url.URL, transport http.RoundTripper, delay latency.Delay) *proxy {
	p := &proxy{closed: make(chan struct{})}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // Gitea sees the host the client asked for
		},
		Transport:     transport,
		FlushInterval: -1, // pass progress and sideband lines on at once
	}
	p.srv = &http.Server{Handler: delay.Wrap(http.HandlerFunc(p.serve)), ReadHeaderTimeout: time.Minute}
	go p.srv.Serve(ln)
	return p
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	// The probe git sends before a large pack ("0000", Content-Length 4) is no push.
	if r.Method == http.MethodPost && r.ContentLength != 4 {
		switch {
		case strings.HasSuffix(r.URL.Path, "/git-receive-pack"):
			p.pushes.Add(1)
			p.wait(r)
		case strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
			p.uploadPacks.Add(1)
		}
	}
	p.rp.ServeHTTP(w, r)
}

// hold makes the next n receive-pack POSTs wait for each other.
func (p *proxy) hold(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gate != nil {
		close(p.gate.open) // a gate still waiting is given up
	}
	p.gate = nil
	if n > 0 {
		p.gate = &gate{want: n, open: make(chan struct{})}
	}
}

// wait holds a receive-pack POST while a gate is set, until the gate opens, the
// client goes away, the proxy closes or holdLimit passes.
func (p *proxy) wait(r *http.Request) {
	p.mu.Lock()
	g := p.gate
	if g == nil {
		p.mu.Unlock()
		return
	}
	g.arrived++
	if g.arrived == g.want {
		close(g.open)
		p.gate = nil
	}
	p.mu.Unlock()
	t := time.NewTimer(holdLimit)
	defer t.Stop()
	select {
	case <-g.open:
	case <-r.Context().Done():
	case <-p.closed:
	case <-t.C:
	}
}

func (p *proxy) close() {
	close(p.closed)
	p.srv.Close()
}
