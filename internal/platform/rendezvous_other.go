//go:build !linux

package platform

import (
	"context"
	"errors"
	"os"
	"time"
)

// RendezvousSupported reports whether this system has rendezvous points: only Linux
// has abstract Unix sockets, memory files and process descriptors.
const RendezvousSupported = false

// ErrNoListener is returned by [Dial] when nobody listens on the name.
var ErrNoListener = errors.New("no listener")

// Listener is the listening end of a rendezvous point.
type Listener struct{}

// Conn is one connection to or from a rendezvous point.
type Conn struct{}

// Listen is not available here.
func Listen(name string) (*Listener, error) { return nil, ErrUnsupported }

// ListenerFromFD is not available here.
func ListenerFromFD(fd int) *Listener { return &Listener{} }

// FD is not available here.
func (l *Listener) FD() int { return -1 }

// Close does nothing here.
func (l *Listener) Close() error { return nil }

// Accept is not available here.
func (l *Listener) Accept() (*Conn, error) { return nil, ErrUnsupported }

// Dial is not available here.
func Dial(name string) (*Conn, error) { return nil, ErrUnsupported }

// FD is not available here.
func (c *Conn) FD() int { return -1 }

// PeerUID is not available here.
func (c *Conn) PeerUID() (int, error) { return -1, ErrUnsupported }

// Send is not available here.
func (c *Conn) Send(msg []byte, fds ...int) error { return ErrUnsupported }

// Recv is not available here.
func (c *Conn) Recv(buf []byte, timeout time.Duration) (int, []int, error) {
	return 0, nil, ErrUnsupported
}

// RecvContext is not available here.
func (c *Conn) RecvContext(ctx context.Context, buf []byte, timeout time.Duration) (int, []int, error) {
	return 0, nil, ErrUnsupported
}

// Ready is not available here.
func (c *Conn) Ready() bool { return false }

// ShutdownRead is not available here.
func (c *Conn) ShutdownRead() error { return ErrUnsupported }

// Close does nothing here.
func (c *Conn) Close() error { return nil }

// ProcessHandle is not available here.
func ProcessHandle(pid int) (*os.File, error) { return nil, ErrUnsupported }

// WaitExited is not available here.
func WaitExited(h *os.File, timeout time.Duration) (bool, error) { return false, ErrUnsupported }

// ConnFromFD is not available here.
func ConnFromFD(fd int) *Conn { return &Conn{} }
