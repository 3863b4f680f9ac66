//go:build linux

package group

import (
	"context"
	"errors"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/platform"
)

// Tests of whom a leader trusts and how long a member waits (docs/security.md).

// dialRaw connects to the rendezvous point as any process could, and sends msg.
func dialRaw(t *testing.T, rv string, msg []byte) *platform.Conn {
	t.Helper()
	c, err := platform.Dial(rv)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(msg); err != nil {
		t.Fatal(err)
	}
	return c
}

// closedUnanswered checks that the leader closed c without a word or a descriptor.
func closedUnanswered(t *testing.T, what string, c *platform.Conn) {
	t.Helper()
	buf := make([]byte, maxMessage)
	n, fds, err := c.Recv(buf, 30*time.Second)
	closeFDs(fds)
	// Closed with the request unread, the connection is reset rather than ended.
	if err != nil && !errors.Is(err, syscall.ECONNRESET) || n != 0 || len(fds) != 0 {
		t.Errorf("%s: got %q with %d descriptors (%v); want the connection closed unanswered", what, buf[:n], len(fds), err)
	}
}

// TestLeaderAcceptsOnlyItsUser: with the expected uid set to one no process here
// has, every peer looks foreign: a leader accepts no entry from the queue, hands
// the line to nobody (not to a member asking with a valid request, not to the heir
// of a set-aside member), and every connection is closed unanswered. The member, of
// this process, then finds the line free and runs alone, holding it.
func TestLeaderAcceptsOnlyItsUser(t *testing.T) {
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	rv := name(t, r)
	l := hold(t, r)
	j := startJoin(context.Background(), config(t, r, "refs/heads/member", r.Commit))
	waitQueued(t, rv, 1)
	req := request{key: "k", env: "e", ref: "refs/heads/raw", cmd: Update{Ref: "refs/heads/raw", New: r.Commit}.command()}
	raw := dialRaw(t, rv, encodeRequest(req))
	waitQueued(t, rv, 2)

	foreign := ^os.Getuid() // no process's uid

	if got := acceptQueued(l, maxGroup, foreign); len(got) != 0 {
		t.Errorf("accepted %d entries from foreign peers", len(got))
	}
	closedUnanswered(t, "a queued request", raw)
	raw.Close()

	// The member looks again and queues; so does another raw connection, which a
	// leader would set aside and pass the line to (passLine), were it trusted.
	waitQueued(t, rv, 1)
	heir := dialRaw(t, rv, encodeRequest(req))
	waitQueued(t, rv, 2)
	pending := dialRaw(t, rv, encodeRequest(req))
	waitQueued(t, rv, 3)
	var accepted []*platform.Conn
	for len(accepted) < 3 {
		c, err := l.Accept()
		if err != nil || c == nil {
			t.Fatalf("accept: %v, %v", c, err)
		}
		accepted = append(accepted, c)
	}
	// accepted[0] is the member, [1] heir, [2] pending: passLine offers the line
	// to each in turn, and then to the queue (empty), and closes it.
	passLine(l, baton{}, accepted, foreign)
	closedUnanswered(t, "the heir of the line", heir)
	closedUnanswered(t, "a pending member", pending)
	heir.Close()
	pending.Close()

	out := j.wait(t)
	if out.Applied || out.Unknown || out.Lease == nil {
		t.Fatalf("member: %+v; want to run alone, holding the line it found free", out)
	}
	// And a leader that hands its line on (handOff) gives it to no foreign peer.
	raw = dialRaw(t, rv, encodeRequest(req))
	waitQueued(t, rv, 1)
	handOff(out.Lease.l, baton{}, foreign)
	out.Lease.l = nil
	closedUnanswered(t, "a would-be heir", raw)
	raw.Close()
	if refs := r.Refs("refs/heads/raw"); len(refs) != 0 {
		t.Errorf("refs written: %v", refs)
	}
}

// TestLeaderAcceptsFloodBounded: a pass accepts at most its limit of connections,
// foreign ones included, and leaves the rest queued.
func TestLeaderAcceptsFloodBounded(t *testing.T) {
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	rv := name(t, r)
	l := hold(t, r)
	defer l.Close()
	var conns []*platform.Conn
	for range 5 {
		conns = append(conns, dialRaw(t, rv, []byte("x")))
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	waitQueued(t, rv, 5)
	if got := acceptQueued(l, 3, ^os.Getuid()); len(got) != 0 {
		t.Errorf("accepted %d entries", len(got))
	}
	if n := testutil.Queued(rv); n != 2 {
		t.Errorf("%d connections still queued after a pass limited to 3 of 5; want 2", n)
	}
}

// TestRequestMustBeItsDeclaredUpdate: a request is read only when its command is
// exactly the one update of the ref it names that a member makes; with another
// command a leader closes the connection unanswered, gives git nothing of it, and
// commits the rest of the group.
func TestRequestMustBeItsDeclaredUpdate(t *testing.T) {
	t.Parallel()
	a := strings.Repeat("a", 40)
	z := strings.Repeat("0", 40)
	for _, tc := range []struct {
		ref, cmd string
		ok       bool
	}{
		{"refs/heads/x", "update refs/heads/x\x00" + a + "\x00\x00", true},
		{"refs/heads/x", "update refs/heads/x\x00" + a + "\x00" + z + "\x00", true},
		{"refs/heads/x", "delete refs/heads/x\x00\x00", true},
		{"refs/heads/x", "delete refs/heads/x\x00" + a + "\x00", true},
		{"refs/heads/x", "delete refs/heads/keep\x00\x00", false},                                         // another ref
		{"refs/heads/x", "update refs/heads/x\x00" + a + "\x00\x00delete refs/heads/keep\x00\x00", false}, // two commands
		{"refs/heads/x", "delete refs/heads/x\x00\x00delete refs/heads/x\x00\x00", false},
		{"refs/heads/x", "option no-deref\x00update refs/heads/x\x00" + a + "\x00\x00", false},
		{"refs/heads/x", "create refs/heads/x\x00" + a + "\x00", false},
		{"refs/heads/x", "update refs/heads/x\x00HEAD\x00\x00", false},                   // not an object id
		{"refs/heads/x", "delete refs/heads/x\x00" + z + "\x00", false},                  // a member never sends a zero <old> for -d
		{"refs/heads/x", "update refs/heads/x\x00" + a + "\x00" + a[:7] + "\x00", false}, // abbreviated
		{"HEAD", "update HEAD\x00" + a + "\x00\x00", false},
		{"refs/heads/x", "update refs/heads/x\x00" + a + "\x00\x00start\x00", false},
	} {
		msg := encodeRequest(request{key: "k", env: "e", ref: tc.ref, cmd: tc.cmd})
		if _, ok := decodeRequest(msg); ok != tc.ok {
			t.Errorf("request for %s with %q: read %v, want %v", tc.ref, tc.cmd, ok, tc.ok)
		}
	}

	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	r.Run("update-ref", "refs/heads/keep", r.Commit)
	rv := name(t, r)
	l := hold(t, r)
	lead := startJoin(context.Background(), config(t, r, "refs/heads/a", r.Commit))
	waitQueued(t, rv, 1)
	// The attacker knows the key: it is the members' own (same process here).
	m := &member{c: &Config{}}
	*m.c = config(t, r, "refs/heads/b", r.Commit)
	forged := m.request()
	forged.cmd = "delete refs/heads/keep\x00\x00"
	raw := dialRaw(t, rv, encodeRequest(forged))
	waitQueued(t, rv, 2)
	member := startJoin(context.Background(), config(t, r, "refs/heads/b", r.Commit))
	waitQueued(t, rv, 3)
	HandOver(l)
	closedUnanswered(t, "a request carrying another ref's delete", raw)
	raw.Close()
	if out := member.wait(t); !out.Applied {
		t.Errorf("member: %+v; want applied by the group", out)
	}
	out := lead.wait(t)
	if !out.Applied {
		t.Errorf("leader: %+v; want applied by its group", out)
	}
	refs := r.Refs("refs/heads/")
	for _, ref := range []string{"refs/heads/keep", "refs/heads/a", "refs/heads/b"} {
		if refs[ref] != r.Commit {
			t.Errorf("%s = %q, want %s (refs %v)", ref, refs[ref], r.Commit, refs)
		}
	}
}

// TestMemberStopsAtBudget: a member whose leader never answers, and one whose
// leader's git never ends (the leader silent, or gone), stop when their budget is
// spent, and never report applied: without an attempt the update was given to no
// git and runs alone; with one still running, the outcome is unknown.
func TestMemberStopsAtBudget(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	budget := func(c Config) Config {
		c.GiveUp = func(waited time.Duration) (bool, time.Duration) {
			return waited >= 1500*time.Millisecond, 1500*time.Millisecond - waited
		}
		return c
	}
	for _, tc := range []string{"never answers", "git never ends, leader silent", "git never ends, leader gone"} {
		t.Run(tc, func(t *testing.T) {
			t.Parallel()
			r := testutil.NewRepo(t, g, "reftable")
			l := hold(t, r)
			defer l.Close()
			j := startJoin(context.Background(), budget(config(t, r, "refs/heads/d", r.Commit)))
			f := acceptMember(t, r, l)
			if tc != "never answers" {
				f.start(r) // git waits for input that never comes
			}
			if tc == "git never ends, leader gone" {
				f.conn.Close()
				f.conn = nil
			}
			out := j.wait(t)
			switch {
			case out.Applied:
				t.Errorf("%+v; reported applied", out)
			case tc == "never answers" && out.Unknown:
				t.Errorf("%+v; want to run alone: no git had it", out)
			case tc != "never answers" && !out.Unknown:
				t.Errorf("%+v; want unknown: the git that has it is still running", out)
			}
			if out.Lease != nil {
				out.Lease.Release()
			}
			if tc != "never answers" {
				if exited, _ := platform.WaitExited(f.proc, 0); exited {
					t.Error("git ended before the member returned: the test shows nothing")
				}
			}
			f.die()
			if tc != "never answers" {
				f.git.Wait()
			}
			if refs := r.Refs("refs/heads/d"); len(refs) != 0 {
				t.Errorf("refs written: %v", refs)
			}
		})
	}
}
