//go:build linux

package platform

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Rendezvous points are abstract-namespace Unix sockets (SOCK_SEQPACKET): nothing in
// the file system, released by the kernel when the last descriptor of the listening
// socket closes, however its holder ends. Binding the name is the mutex; the socket's
// accept queue is the line of waiting processes; and the listening socket can be
// handed to another process with [Conn.Send], queue and all.

// Listener is the listening end of a rendezvous point. It is kept as a bare
// descriptor (an *os.File would put it in blocking mode when its Fd is taken).
type Listener struct{ fd descriptor }

// Conn is one connection to or from a rendezvous point. Messages keep their
// boundaries and may carry open files.
type Conn struct {
	fd descriptor
	// polled is a duplicate of fd in the runtime's poller, made by the first
	// RecvContext.
	polled *os.File
}

// descriptor is a bare descriptor that is closed at most once. A second close of a
// bare number would close whatever the process opened under that number since (a
// listener, a test's directory), so after the first, the number reads as -1 and
// every call on it fails with EBADF.
type descriptor struct{ n atomic.Int64 }

func newListener(fd int) *Listener {
	l := &Listener{}
	l.fd.n.Store(int64(fd))
	return l
}

func newConn(fd int) *Conn {
	c := &Conn{}
	c.fd.n.Store(int64(fd))
	return c
}

func (d *descriptor) get() int { return int(d.n.Load()) }

func (d *descriptor) close() error {
	fd := d.n.Swap(-1)
	if fd < 0 {
		return os.ErrClosed
	}
	return unix.Close(int(fd))
}

// RendezvousSupported reports whether this system has rendezvous points.
const RendezvousSupported = true

// ErrNoListener is returned by [Dial] when nobody listens on the name.
var ErrNoListener = errors.New("no listener")

func abstract(name string) *unix.SockaddrUnix { return &unix.SockaddrUnix{Name: "@" + name} }

// Listen binds name and listens on it. It returns [ErrBusy] when another socket holds
// the name.
func Listen(name string) (*Listener, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := unix.Bind(fd, abstract(name)); err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.EADDRINUSE) {
			return nil, ErrBusy
		}
		return nil, os.NewSyscallError("bind", err)
	}
	if err := unix.Listen(fd, 4096); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("listen", err)
	}
	return newListener(fd), nil
}

// ListenerFromFD takes over a listening socket received with [Conn.Recv].
func ListenerFromFD(fd int) *Listener { return newListener(fd) }

// FD is the listening socket, to hand over with [Conn.Send].
func (l *Listener) FD() int { return l.fd.get() }

// Close closes this process's descriptor of the listening socket. Connections still
// queued are reset once no process has it open.
func (l *Listener) Close() error { return l.fd.close() }

// Accept takes the next queued connection without waiting: nil when none is queued.
func (l *Listener) Accept() (*Conn, error) {
	for {
		fd, _, err := unix.Accept4(l.fd.get(), unix.SOCK_CLOEXEC)
		switch {
		case err == nil:
			return newConn(fd), nil
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.ECONNABORTED):
			continue
		case errors.Is(err, unix.EAGAIN):
			return nil, nil
		}
		return nil, os.NewSyscallError("accept", err)
	}
}

// dialWait bounds how long [Dial] waits for room in a listener's queue (full only
// when something floods it: it holds 4096).
var dialWait = unix.Timeval{Sec: 1}

// Dial connects to name. It returns [ErrNoListener] when nobody listens there, and
// an error when the listener's queue stays full for dialWait.
func Dial(name string) (*Conn, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &dialWait); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("setsockopt", err)
	}
	for {
		err = unix.Connect(fd, abstract(name))
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		if errors.Is(err, unix.ECONNREFUSED) || errors.Is(err, unix.ENOENT) {
			return nil, ErrNoListener
		}
		return nil, os.NewSyscallError("connect", err)
	}
	return newConn(fd), nil
}

// FD is the connection's descriptor, to hand over with [Conn.Send].
func (c *Conn) FD() int { return c.fd.get() }

// PeerUID is the user id of the process that created the peer socket (for a dialled
// connection, the one that listened first).
func (c *Conn) PeerUID() (int, error) {
	u, err := unix.GetsockoptUcred(c.fd.get(), unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, os.NewSyscallError("getsockopt", err)
	}
	return int(u.Uid), nil
}

// Send sends one message with descriptors attached. It fails (with EPIPE) once the
// peer has closed the connection or shut down its reading side: a message that was
// sent is in the peer's queue.
func (c *Conn) Send(msg []byte, fds ...int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	for {
		err := unix.Sendmsg(c.fd.get(), msg, oob, nil, unix.MSG_NOSIGNAL)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return os.NewSyscallError("sendmsg", err)
		}
		return nil
	}
}

// maxFDs is the most descriptors one message may carry.
const maxFDs = 64

// Recv waits for the next message, at most timeout (forever if negative). It returns
// n == 0 with a nil error at the end of the connection, and [os.ErrDeadlineExceeded]
// when the time ran out. Descriptors attached to the message are returned open
// (close-on-exec); the caller owns them.
func (c *Conn) Recv(buf []byte, timeout time.Duration) (n int, fds []int, err error) {
	if timeout >= 0 {
		ready, err := c.wait(timeout)
		if err != nil {
			return 0, nil, err
		}
		if !ready {
			return 0, nil, os.ErrDeadlineExceeded
		}
	}
	return recvmsg(c.fd.get(), buf, 0)
}

// RecvContext is [Conn.Recv] that also ends its wait when ctx ends, with ctx's error.
// It waits in the runtime's poller, not in a blocking system call: while a thread is
// blocked in one, the runtime's monitor thread wakes up every 20 µs to 10 ms to see
// whether to take its processor away, and on a long wait that costs more than the
// wait's own system calls. Here every thread sleeps until the message, the deadline
// or the end of ctx.
func (c *Conn) RecvContext(ctx context.Context, buf []byte, timeout time.Duration) (n int, fds []int, err error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, err
	}
	if c.polled == nil {
		fd, err := unix.FcntlInt(uintptr(c.fd.get()), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return 0, nil, os.NewSyscallError("fcntl", err)
		}
		// The duplicate shares the socket's file status: both are non-blocking from
		// now on, which Recv and Send do not mind.
		if err := unix.SetNonblock(fd, true); err != nil {
			unix.Close(fd)
			return 0, nil, os.NewSyscallError("fcntl", err)
		}
		c.polled = os.NewFile(uintptr(fd), "rendezvous")
	}
	f := c.polled
	var deadline time.Time
	if timeout >= 0 {
		deadline = time.Now().Add(timeout)
	}
	if err := f.SetReadDeadline(deadline); err != nil {
		return 0, nil, err
	}
	stop := context.AfterFunc(ctx, func() { f.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, nil, err
	}
	readErr := rc.Read(func(fd uintptr) bool {
		n, fds, err = recvmsg(int(fd), buf, unix.MSG_DONTWAIT)
		return !errors.Is(err, unix.EAGAIN)
	})
	switch {
	case readErr == nil:
		return n, fds, err
	case ctx.Err() != nil:
		return 0, nil, ctx.Err()
	}
	return 0, nil, readErr
}

// recvmsg receives one message from fd, with the descriptors attached to it. A bare
// unix.EAGAIN (flags with MSG_DONTWAIT, nothing queued) is returned unwrapped.
func recvmsg(fd int, buf []byte, flags int) (n int, fds []int, err error) {
	oob := make([]byte, unix.CmsgSpace(maxFDs*4))
	var oobn int
	for {
		n, oobn, _, _, err = unix.Recvmsg(fd, buf, oob, flags|unix.MSG_CMSG_CLOEXEC)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if errors.Is(err, unix.EAGAIN) {
		return 0, nil, err
	}
	if err != nil {
		return 0, nil, os.NewSyscallError("recvmsg", err)
	}
	if oobn > 0 {
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			return 0, nil, os.NewSyscallError("recvmsg", err)
		}
		for _, m := range msgs {
			got, err := unix.ParseUnixRights(&m)
			if err == nil {
				fds = append(fds, got...)
			}
		}
	}
	return n, fds, nil
}

// wait waits until the connection has something to read (a message or its end).
func (c *Conn) wait(timeout time.Duration) (bool, error) {
	return pollIn(c.fd.get(), timeout)
}

// Ready reports without waiting whether a message (or the end) can be read.
func (c *Conn) Ready() bool {
	ok, _ := pollIn(c.fd.get(), 0)
	return ok
}

// ShutdownRead stops the connection from receiving: the peer's later [Conn.Send]
// fails, while messages already queued can still be read.
func (c *Conn) ShutdownRead() error { return unix.Shutdown(c.fd.get(), unix.SHUT_RD) }

// Close closes the connection.
func (c *Conn) Close() error {
	if c.polled != nil {
		c.polled.Close()
	}
	return c.fd.close()
}

func pollIn(fd int, timeout time.Duration) (bool, error) {
	ms := -1
	if timeout >= 0 {
		ms = int((timeout + time.Millisecond - 1) / time.Millisecond)
	}
	deadline := time.Now().Add(timeout)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, ms)
		if errors.Is(err, unix.EINTR) {
			if timeout >= 0 {
				ms = max(int(time.Until(deadline)/time.Millisecond), 0)
			}
			continue
		}
		if err != nil {
			return false, os.NewSyscallError("poll", err)
		}
		return n > 0, nil
	}
}

// MemFile is an anonymous file in memory (memfd_create) that vanishes when its last
// descriptor closes: a process's output can be written to it and read back by any
// process that holds it, after the writer is gone.
func MemFile(name string) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("memfd_create", err)
	}
	return os.NewFile(uintptr(fd), name), nil
}

// ProcessHandle is a descriptor of a running process (pidfd_open): unlike a pid, it
// can never come to mean another process, and it can be handed to other processes.
func ProcessHandle(pid int) (*os.File, error) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return nil, os.NewSyscallError("pidfd_open", err)
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "process"), nil
}

// WaitExited waits until the process of a [ProcessHandle] has ended, at most timeout
// (forever if negative), and reports whether it has.
func WaitExited(h *os.File, timeout time.Duration) (bool, error) {
	return pollIn(int(h.Fd()), timeout)
}

// ConnFromFD takes over a connection received with [Conn.Recv].
func ConnFromFD(fd int) *Conn { return newConn(fd) }
