//go:build linux

package platform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func testName(t *testing.T) string {
	return fmt.Sprintf("refretry-test-%d-%s", os.Getpid(), t.Name())
}

func TestRendezvousNameIsAMutex(t *testing.T) {
	name := testName(t)
	if _, err := Dial(name); !errors.Is(err, ErrNoListener) {
		t.Fatalf("Dial before Listen: %v, want ErrNoListener", err)
	}
	l, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(name); !errors.Is(err, ErrBusy) {
		t.Fatalf("second Listen: %v, want ErrBusy", err)
	}
	l.Close()
	l2, err := Listen(name)
	if err != nil {
		t.Fatalf("Listen after Close: %v", err)
	}
	l2.Close()
}

func TestRendezvousMessagesAndFiles(t *testing.T) {
	name := testName(t)
	l, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if c, err := l.Accept(); c != nil || err != nil {
		t.Fatalf("Accept on an empty queue: %v, %v; want nothing", c, err)
	}
	client, err := Dial(name)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if uid, err := client.PeerUID(); err != nil || uid != os.Getuid() {
		t.Fatalf("PeerUID = %d, %v; want %d", uid, err, os.Getuid())
	}
	server, err := l.Accept()
	if err != nil || server == nil {
		t.Fatalf("Accept: %v, %v", server, err)
	}
	defer server.Close()

	// Two messages keep their boundaries; a memory file travels with the first.
	mem, err := MemFile("test")
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	if _, err := mem.WriteString("hello from the sender"); err != nil {
		t.Fatal(err)
	}
	if err := server.Send([]byte("one"), int(mem.Fd())); err != nil {
		t.Fatal(err)
	}
	if err := server.Send([]byte("two")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, fds, err := client.Recv(buf, time.Second)
	if err != nil || string(buf[:n]) != "one" || len(fds) != 1 {
		t.Fatalf("first Recv = %q, %v, %v", buf[:n], fds, err)
	}
	got := os.NewFile(uintptr(fds[0]), "got")
	defer got.Close()
	b := make([]byte, 64)
	k, _ := got.ReadAt(b, 0)
	if string(b[:k]) != "hello from the sender" {
		t.Fatalf("memory file read %q", b[:k])
	}
	n, fds, err = client.Recv(buf, time.Second)
	if err != nil || string(buf[:n]) != "two" || len(fds) != 0 {
		t.Fatalf("second Recv = %q, %v, %v", buf[:n], fds, err)
	}
	if _, _, err := client.Recv(buf, 10*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Recv with nothing queued: %v, want deadline exceeded", err)
	}
}

// The withdrawal rule the group commit relies on: after ShutdownRead, what was
// queued before it can still be read, and every later Send fails.
func TestRendezvousShutdownReadRefusesLaterSends(t *testing.T) {
	name := testName(t)
	l, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := Dial(name)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil || server == nil {
		t.Fatal(err)
	}
	defer server.Close()
	if err := server.Send([]byte("queued")); err != nil {
		t.Fatal(err)
	}
	if err := client.ShutdownRead(); err != nil {
		t.Fatal(err)
	}
	if err := server.Send([]byte("late")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Send after the peer's ShutdownRead: %v, want EPIPE", err)
	}
	buf := make([]byte, 16)
	n, _, err := client.Recv(buf, time.Second)
	if err != nil || string(buf[:n]) != "queued" {
		t.Fatalf("Recv after ShutdownRead = %q, %v; want the queued message", buf[:n], err)
	}
	n, _, err = client.Recv(buf, time.Second)
	if err != nil || n != 0 {
		t.Fatalf("Recv after the queue drained = %q, %v; want the end", buf[:n], err)
	}
}

// A listening socket handed to another holder keeps its queue: a connection made
// before the hand-over is accepted by the new holder.
func TestRendezvousListenerHandOver(t *testing.T) {
	name := testName(t)
	l, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := Dial(name)
	if err != nil {
		t.Fatal(err)
	}
	defer waiting.Close()
	heir, err := Dial(name)
	if err != nil {
		t.Fatal(err)
	}
	defer heir.Close()
	first, err := l.Accept()
	if err != nil || first == nil {
		t.Fatal(err)
	}
	if err := first.Send([]byte("lead"), l.FD()); err != nil {
		t.Fatal(err)
	}
	first.Close()
	l.Close()
	// The waiting connection was queued second; the first accepted one is "heir"
	// or "waiting" depending on order, so read from whichever got the message.
	buf := make([]byte, 16)
	var fds []int
	for _, c := range []*Conn{waiting, heir} {
		if c.Ready() {
			_, fds, err = c.Recv(buf, 0)
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(fds) != 1 {
		t.Fatalf("hand-over carried %d descriptors, want 1", len(fds))
	}
	l2 := ListenerFromFD(fds[0])
	defer l2.Close()
	c, err := l2.Accept()
	if err != nil || c == nil {
		t.Fatalf("Accept by the new holder: %v, %v; want the queued connection", c, err)
	}
	c.Close()
}

func TestProcessHandleSeesExit(t *testing.T) {
	cmd := exec.Command("sleep", "0.2")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	h, err := ProcessHandle(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if done, err := WaitExited(h, 0); err != nil || done {
		t.Fatalf("WaitExited on a running process: %v, %v", done, err)
	}
	go cmd.Wait()
	if done, err := WaitExited(h, 5*time.Second); err != nil || !done {
		t.Fatalf("WaitExited after exit: %v, %v", done, err)
	}
}

// TestDialFullQueue: a listener whose queue is full (here after one connection, as
// its backlog is 0; a flood of connections for a real one) makes Dial fail, not wait
// for room indefinitely.
func TestDialFullQueue(t *testing.T) {
	t.Parallel()
	name := testName(t)
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Bind(fd, abstract(name)); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	var conns []*Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range 3 {
		c, err := Dial(name)
		if err != nil {
			if errors.Is(err, ErrNoListener) {
				t.Fatalf("Dial on a full queue: %v; want a failure of its own", err)
			}
			return
		}
		conns = append(conns, c)
	}
	t.Errorf("%d connections queued at a listener with backlog 0", len(conns))
}

// TestCloseTwiceLeavesTheNumberAlone: closing a listener or a connection a second
// time must not close what the process opened since under the same number.
//
// Not parallel: it puts a pipe at the number a close freed, which would take the
// number from under anything another test opened meanwhile.
func TestCloseTwiceLeavesTheNumberAlone(t *testing.T) {
	name := testName(t)
	l, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(name)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, e := range []struct {
		what  string
		fd    int
		close func() error
	}{{"listener", l.FD(), l.Close}, {"connection", c.FD(), c.Close}} {
		if err := e.close(); err != nil {
			t.Fatalf("%s: first close: %v", e.what, err)
		}
		// The number is free: the pipe's read end takes it, as the next open would.
		if err := unix.Dup3(int(r.Fd()), e.fd, unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		if err := e.close(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("%s: second close: %v, want %v", e.what, err, os.ErrClosed)
		}
		if _, err := unix.FcntlInt(uintptr(e.fd), unix.F_GETFD, 0); err != nil {
			t.Errorf("%s: the descriptor now at its old number %d was closed by its second close: %v", e.what, e.fd, err)
		}
		unix.Close(e.fd)
	}
}

// RecvContext waits for a message, its deadline or its context, and reads a message
// that was queued before it was called; Recv and Send still work on the connection
// after it.
func TestRecvContext(t *testing.T) {
	name := testName(t)
	l, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	client, err := Dial(name)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := l.Accept()
	if err != nil || server == nil {
		t.Fatal(err)
	}
	defer server.Close()
	buf := make([]byte, 16)
	ctx := context.Background()

	if _, _, err := client.RecvContext(ctx, buf, 10*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("RecvContext with nothing queued: %v, want deadline exceeded", err)
	}
	if err := server.Send([]byte("queued")); err != nil {
		t.Fatal(err)
	}
	if n, _, err := client.RecvContext(ctx, buf, -1); err != nil || string(buf[:n]) != "queued" {
		t.Fatalf("RecvContext with a message queued = %q, %v", buf[:n], err)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		server.Send([]byte("later"))
	}()
	if n, _, err := client.RecvContext(ctx, buf, -1); err != nil || string(buf[:n]) != "later" {
		t.Fatalf("RecvContext for a message sent while it waits = %q, %v", buf[:n], err)
	}

	cctx, cancel := context.WithCancel(ctx)
	go func() {
		time.Sleep(10 * time.Millisecond)
		cancel()
	}()
	if _, _, err := client.RecvContext(cctx, buf, -1); !errors.Is(err, context.Canceled) {
		t.Fatalf("RecvContext when its context ends: %v, want context.Canceled", err)
	}
	if _, _, err := client.RecvContext(cctx, buf, -1); !errors.Is(err, context.Canceled) {
		t.Fatalf("RecvContext with its context ended: %v, want context.Canceled", err)
	}

	if err := client.Send([]byte("back")); err != nil {
		t.Fatalf("Send after RecvContext: %v", err)
	}
	if n, _, err := server.Recv(buf, time.Second); err != nil || string(buf[:n]) != "back" {
		t.Fatalf("the other end read %q, %v", buf[:n], err)
	}
	if err := server.Send([]byte("plain")); err != nil {
		t.Fatal(err)
	}
	if n, _, err := client.Recv(buf, time.Second); err != nil || string(buf[:n]) != "plain" {
		t.Fatalf("Recv after RecvContext = %q, %v", buf[:n], err)
	}
	server.Close()
	if n, _, err := client.RecvContext(ctx, buf, -1); err != nil || n != 0 {
		t.Fatalf("RecvContext at the end of the connection = %q, %v; want the end", buf[:n], err)
	}
}
