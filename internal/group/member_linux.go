//go:build linux

package group

import (
	"context"
	"errors"
	"os"
	"strconv"
	"time"

	"github.com/refretry/refretry/internal/platform"
)

// member is one invocation taking part in a group commit.
type member struct {
	c    *Config
	name string // the rendezvous point
	k    string // the group key, once computed (see keyOf)
	req  []byte // its request, once encoded

	start time.Time

	// The latest group attempt a leader included this update in: that git's
	// stdout and stderr and a descriptor of the git process. nil when none.
	att *attempt
}

// attempt is what a member holds of one group git: its stdout and stderr, the
// process, and the member's place in its input.
type attempt struct {
	stdout, stderr, proc *os.File
	place                int
}

func (a *attempt) close() {
	if a != nil {
		a.stdout.Close()
		a.stderr.Close()
		a.proc.Close()
	}
}

// committed reports whether the git applied the member's update: it reported more
// commits than there are transactions before the member's.
func (a *attempt) committed() bool { return commits(readAll(a.stdout)) > a.place }

// readAll reads a memory file from its start without moving its offset, which its
// writer shares.
func readAll(f *os.File) []byte {
	var out []byte
	buf := make([]byte, 4096)
	for off := int64(0); ; {
		n, err := f.ReadAt(buf, off)
		out = append(out, buf[:n]...)
		off += int64(n)
		if err != nil || n == 0 {
			return out
		}
	}
}

// keyOf is the member's group key, computed when first needed: an invocation that
// meets nobody never needs it.
func (m *member) keyOf() string {
	if m.k == "" {
		m.k = key(m.c)
	}
	return m.k
}

// next is what a member does after a wait.
type next int

const (
	finished  next = iota // the outcome is known
	reconnect             // not in any git; look for the leader again
	leadNow               // handed the listening socket: lead
)

// poll is how often a waiting member looks at its context and patience.
const poll = 100 * time.Millisecond

func join(ctx context.Context, c *Config) Outcome {
	if traced(c.Env) {
		return Outcome{}
	}
	name, ok := rendezvousName(c.CommonDir)
	if !ok {
		return Outcome{}
	}
	m := &member{c: c, name: name, start: time.Now()}
	defer func() { m.att.close() }()
	for {
		if ctx.Err() != nil || m.outOfPatience() {
			return Outcome{}
		}
		conn, err := platform.Dial(name)
		if errors.Is(err, platform.ErrNoListener) {
			l, err := platform.Listen(name)
			switch {
			case err == nil:
				return lead(ctx, m, l, baton{})
			case errors.Is(err, platform.ErrBusy):
				// Another invocation bound the name a moment ago and is about to
				// listen: connect to it.
				time.Sleep(50 * time.Microsecond)
				continue
			}
			return Outcome{}
		}
		if err != nil {
			return Outcome{}
		}
		if uid, err := conn.PeerUID(); err != nil || uid != os.Getuid() {
			// Only this user's invocations lead this user's updates.
			conn.Close()
			return Outcome{}
		}
		if m.req == nil {
			m.req = encodeRequest(m.keyOf(), c.Update)
		}
		if err := conn.Send(m.req); err != nil {
			conn.Close() // the leader went away meanwhile
			continue
		}
		out, then, l, b := m.wait(ctx, conn)
		switch then {
		case finished:
			return out
		case leadNow:
			return lead(ctx, m, l, b)
		}
	}
}

// wait waits for the leader's word on the update sent over conn, and closes conn.
func (m *member) wait(ctx context.Context, conn *platform.Conn) (Outcome, next, *platform.Listener, baton) {
	defer conn.Close()
	buf := make([]byte, maxMessage)
	for {
		n, fds, err := conn.Recv(buf, poll)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if ctx.Err() != nil || m.outOfPatience() {
				return m.withdraw(ctx, conn)
			}
			continue
		}
		if err != nil || n == 0 {
			// The leader is gone (or its end failed): whatever git it started for
			// this update decides, once it has ended.
			return m.leaderGone(ctx)
		}
		out, then, l, b, done := m.message(buf[:n], fds)
		if done {
			return out, then, l, b
		}
	}
}

// message acts on one message from the leader. done is false when the wait goes on.
func (m *member) message(msg []byte, fds []int) (out Outcome, then next, l *platform.Listener, b baton, done bool) {
	kind, body := msg[0], msg[1:]
	switch {
	case kind == msgAttempt && len(fds) == 3:
		place, err := strconv.Atoi(string(body))
		if err != nil || place < 0 {
			break
		}
		m.att.close()
		m.att = &attempt{
			stdout: os.NewFile(uintptr(fds[0]), "git-stdout"),
			stderr: os.NewFile(uintptr(fds[1]), "git-stderr"),
			proc:   os.NewFile(uintptr(fds[2]), "git"),
			place:  place,
		}
		return out, 0, nil, b, false
	case kind == msgApplied && m.att != nil:
		return Outcome{Applied: true, Stderr: readAll(m.att.stderr)}, finished, nil, b, true
	case kind == msgAlone:
		return Outcome{}, finished, nil, b, true
	case kind == msgAgain:
		m.att.close()
		m.att = nil
		return Outcome{}, reconnect, nil, b, true
	case kind == msgLead && len(fds) == 1:
		return Outcome{}, leadNow, platform.ListenerFromFD(fds[0]), decodeBaton(body), true
	}
	// A message this member does not understand: the leader is not one it can
	// trust with the update. Descriptors that came with it are closed.
	closeFDs(fds)
	return Outcome{}, finished, nil, b, true
}

// leaderGone settles the update after the leader's end of the connection closed
// without a verdict: applied if and only if the last git it was included in
// committed.
func (m *member) leaderGone(ctx context.Context) (Outcome, next, *platform.Listener, baton) {
	if m.att == nil {
		return Outcome{}, reconnect, nil, baton{}
	}
	if !m.awaitGit(ctx) {
		return Outcome{}, finished, nil, baton{} // interrupted; the caller exits
	}
	if m.att.committed() {
		return Outcome{Applied: true, Stderr: readAll(m.att.stderr)}, finished, nil, baton{}
	}
	m.att.close()
	m.att = nil
	return Outcome{}, reconnect, nil, baton{}
}

// withdraw stops waiting: after ShutdownRead the leader cannot include the update in
// another git, and the messages already queued say whether it was in one.
func (m *member) withdraw(ctx context.Context, conn *platform.Conn) (Outcome, next, *platform.Listener, baton) {
	conn.ShutdownRead()
	buf := make([]byte, maxMessage)
	for {
		n, fds, err := conn.Recv(buf, 0)
		if err != nil || n == 0 {
			break
		}
		out, then, l, b, done := m.message(buf[:n], fds)
		if !done {
			continue
		}
		if then == leadNow {
			// Handed the line while leaving it: run alone at its head, and pass it on.
			return Outcome{Lease: &Lease{l: l, b: b}}, finished, nil, baton{}
		}
		if then == reconnect {
			return Outcome{}, finished, nil, baton{}
		}
		return out, finished, nil, baton{}
	}
	if m.att == nil {
		return Outcome{}, finished, nil, baton{}
	}
	if !m.awaitGit(ctx) {
		return Outcome{}, finished, nil, baton{}
	}
	if m.att.committed() {
		return Outcome{Applied: true, Stderr: readAll(m.att.stderr)}, finished, nil, baton{}
	}
	return Outcome{}, finished, nil, baton{}
}

// awaitGit waits for the git of the latest attempt to end. It reports false when ctx
// ended first.
func (m *member) awaitGit(ctx context.Context) bool {
	for {
		done, err := platform.WaitExited(m.att.proc, poll)
		if done || err != nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
	}
}

// outOfPatience reports whether the member has waited as long as it may.
func (m *member) outOfPatience() bool {
	waited := time.Since(m.start)
	if waited < firstPatience {
		return false
	}
	if m.c.GiveUp == nil {
		return waited >= time.Minute
	}
	return m.c.GiveUp(waited)
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		os.NewFile(uintptr(fd), "").Close()
	}
}
