//go:build linux

package group

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strconv"
	"strings"
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
	// askAt is when (counted from start) GiveUp is next asked; negative: never.
	askAt time.Duration

	// The latest group attempt a leader included this update in: that git's
	// stdout and stderr and a descriptor of the git process. nil when none.
	att *attempt
}

// attempt is what a member holds of one group git: its stdout and stderr, the
// process, the member's place in its input (the number of transactions before its
// own), and where git's stderr for it begins.
type attempt struct {
	stdout, stderr, proc *os.File
	ends                 *os.File // where each transaction's stderr ended (gitRun.ends)
	place                int
	errFrom              int64
}

// errEnd is where git's stderr for the member's update ended, as the leader recorded
// it; -1 when it did not (one transaction for the whole group, or a leader that ended
// first: then nothing was given to git after the member's update).
func (a *attempt) errEnd() int64 {
	b := make([]byte, 8)
	if n, _ := a.ends.ReadAt(b, int64(a.place)*8); n < 8 {
		return -1
	}
	return int64(binary.LittleEndian.Uint64(b))
}

// errOut is git's stderr for the member's update: from where it began to the offset
// the leader gave (-1: the end, when the leader could not say).
func (a *attempt) errOut(to int64) []byte {
	b := readAll(a.stderr)
	if to < 0 || to > int64(len(b)) {
		to = int64(len(b))
	}
	if a.errFrom > to {
		return []byte{}
	}
	return b[a.errFrom:to]
}

func (a *attempt) close() {
	if a != nil {
		a.stdout.Close()
		a.stderr.Close()
		a.proc.Close()
		a.ends.Close()
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

// request is the member's update as a leader needs it, computed when first needed:
// an invocation that meets nobody never needs it.
func (m *member) request() request {
	if m.k == "" {
		m.k = key(m.c)
	}
	return request{key: m.k, env: envKey(m.c.Env), opts: m.c.Options, ref: m.c.Update.Ref, cmd: m.c.Update.command()}
}

// next is what a member does after a wait.
type next int

const (
	finished  next = iota // the outcome is known
	reconnect             // not in any git; look for the leader again
	leadNow               // handed the listening socket: lead
	untrusted             // the leader said something this member does not understand
)

// poll is how often a member waiting for a group's git to end (its leader gone)
// looks at its context.
const poll = 100 * time.Millisecond

func join(ctx context.Context, c *Config) Outcome {
	if traced(c.Env) {
		return Outcome{}
	}
	name, ok := rendezvousName(c.Store.Dir)
	if !ok {
		return Outcome{}
	}
	m := &member{c: c, name: name, start: time.Now()}
	defer func() { m.att.close() }()
	for {
		if ctx.Err() != nil || m.outOfPatience() {
			return Outcome{}
		}
		// Taking the line is tried first: it is the one system call an invocation
		// that meets nobody needs.
		l, err := platform.Listen(name)
		switch {
		case err == nil:
			// The line was free a moment ago: run alone at its head. Whoever queues
			// meanwhile is taken care of when the line is passed on.
			return Outcome{Lease: &Lease{l: l}}
		case !errors.Is(err, platform.ErrBusy):
			return Outcome{}
		}
		conn, err := platform.Dial(name)
		if errors.Is(err, platform.ErrNoListener) {
			// Bound a moment ago and not listening yet, or just closed: look again.
			time.Sleep(50 * time.Microsecond)
			continue
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
			m.req = encodeRequest(m.request())
			if len(m.req) > maxMessage {
				conn.Close()
				return Outcome{}
			}
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
		// Until the leader's next word, the time to ask GiveUp again, or the end of
		// ctx, whichever comes first: a waiting member wakes up for nothing else.
		n, fds, err := conn.RecvContext(ctx, buf, m.patience())
		if errors.Is(err, os.ErrDeadlineExceeded) || ctx.Err() != nil {
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
		switch {
		case then == untrusted:
			// Stop listening; the git it was last told of, if any, decides.
			conn.ShutdownRead()
			return m.settle(ctx)
		case done:
			return out, then, l, b
		}
	}
}

// message acts on one message from the leader. done is false when the wait goes on.
func (m *member) message(msg []byte, fds []int) (out Outcome, then next, l *platform.Listener, b baton, done bool) {
	kind, body := msg[0], msg[1:]
	switch {
	case kind == msgAttempt && len(fds) == 4:
		p, f, _ := strings.Cut(string(body), " ")
		place, err1 := strconv.Atoi(p)
		from, err2 := strconv.ParseInt(f, 10, 64)
		if err1 != nil || err2 != nil || place < 0 || from < 0 {
			break
		}
		m.att.close()
		m.att = &attempt{
			stdout:  os.NewFile(uintptr(fds[0]), "git-stdout"),
			stderr:  os.NewFile(uintptr(fds[1]), "git-stderr"),
			proc:    os.NewFile(uintptr(fds[2]), "git"),
			ends:    os.NewFile(uintptr(fds[3]), "git-stderr-ends"),
			place:   place,
			errFrom: from,
		}
		return out, 0, nil, b, false
	case kind == msgApplied && m.att != nil:
		to := int64(-1)
		if len(body) > 0 {
			v, err := strconv.ParseInt(string(body), 10, 64)
			if err != nil {
				break
			}
			to = v
		}
		return Outcome{Applied: true, Stderr: m.att.errOut(to)}, finished, nil, b, true
	case kind == msgAlone:
		return Outcome{}, finished, nil, b, true
	case kind == msgAgain:
		m.att.close()
		m.att = nil
		return Outcome{}, reconnect, nil, b, true
	case kind == msgLead && len(fds) == 1:
		return Outcome{}, leadNow, platform.ListenerFromFD(fds[0]), decodeBaton(body), true
	case kind == msgHold && len(fds) >= 1:
		lease := &Lease{l: platform.ListenerFromFD(fds[0]), b: decodeBaton(body)}
		for _, fd := range fds[1:] {
			lease.pending = append(lease.pending, platform.ConnFromFD(fd))
		}
		return Outcome{Lease: lease}, finished, nil, b, true
	}
	// A message this member does not understand: the leader is not one it can
	// trust with the update. Descriptors that came with it are closed.
	closeFDs(fds)
	return Outcome{}, untrusted, nil, b, true
}

// leaderGone settles the update after the leader's end of the connection closed
// without a verdict: applied if and only if the last git it was included in
// committed.
func (m *member) leaderGone(ctx context.Context) (Outcome, next, *platform.Listener, baton) {
	if m.att == nil {
		return Outcome{}, reconnect, nil, baton{}
	}
	switch m.awaitGit(ctx) {
	case waitInterrupted:
		return Outcome{}, finished, nil, baton{} // the caller exits
	case waitSpent:
		return Outcome{Unknown: true}, finished, nil, baton{}
	}
	if m.att.committed() {
		return Outcome{Applied: true, Stderr: m.att.errOut(m.att.errEnd())}, finished, nil, baton{}
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
		if then == untrusted {
			break
		}
		if then == leadNow {
			// Handed the line while leaving it: run alone at its head, and pass it on.
			return Outcome{Lease: &Lease{l: l, b: b}}, finished, nil, baton{}
		}
		if out.Lease != nil {
			return out, finished, nil, baton{}
		}
		if then == reconnect {
			return Outcome{}, finished, nil, baton{}
		}
		return out, finished, nil, baton{}
	}
	return m.settle(ctx)
}

// settle decides the outcome from the last git the member was told of, once it has
// ended, when no leader will say more: applied if that git committed the update,
// else run alone (no git can take it any more). If that git has not ended when the
// budget runs out, the outcome is unknown.
func (m *member) settle(ctx context.Context) (Outcome, next, *platform.Listener, baton) {
	if m.att == nil {
		return Outcome{}, finished, nil, baton{}
	}
	switch m.awaitGit(ctx) {
	case waitInterrupted:
		return Outcome{}, finished, nil, baton{}
	case waitSpent:
		return Outcome{Unknown: true}, finished, nil, baton{}
	}
	if m.att.committed() {
		return Outcome{Applied: true, Stderr: m.att.errOut(m.att.errEnd())}, finished, nil, baton{}
	}
	return Outcome{}, finished, nil, baton{}
}

// gitWait is how a member's wait for a group's git ended.
type gitWait int

const (
	gitEnded        gitWait = iota
	waitInterrupted         // ctx ended first
	waitSpent               // the budget ran out first
)

// awaitGit waits for the git of the latest attempt to end, within the member's
// budget: a git that has not ended when the budget is spent (or ctx ends) is waited
// for no longer. (The descriptor came from a leader of this user, but nothing
// bounds how long its git may run.)
func (m *member) awaitGit(ctx context.Context) gitWait {
	for {
		wait := m.patience()
		if wait < 0 || wait > poll {
			wait = poll // to see the end of ctx
		}
		if done, err := platform.WaitExited(m.att.proc, wait); done || err != nil {
			return gitEnded
		}
		switch {
		case ctx.Err() != nil:
			return waitInterrupted
		case m.outOfPatience():
			return waitSpent
		}
	}
}

// outOfPatience reports whether the member has waited as long as it may. GiveUp is
// asked only once the time it named has come.
func (m *member) outOfPatience() bool {
	if m.askAt < 0 {
		return false
	}
	waited := time.Since(m.start)
	if waited < m.askAt {
		return false
	}
	giveUp, again := m.giveUp(waited)
	switch {
	case giveUp:
		return true
	case again <= 0:
		m.askAt = -1
	default:
		m.askAt = waited + again
	}
	return false
}

func (m *member) giveUp(waited time.Duration) (bool, time.Duration) {
	if m.c.GiveUp == nil {
		return waited >= time.Minute, time.Minute - waited
	}
	return m.c.GiveUp(waited)
}

// patience is how long the member may wait before GiveUp is to be asked again
// (negative: as long as it takes).
func (m *member) patience() time.Duration {
	if m.askAt < 0 {
		return -1
	}
	return max(m.askAt-time.Since(m.start), 0)
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		os.NewFile(uintptr(fd), "").Close()
	}
}
