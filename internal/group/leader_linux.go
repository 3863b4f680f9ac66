//go:build linux

package group

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/gitmsg"
	"github.com/refretry/refretry/internal/platform"
)

// maxGroup bounds how many updates one git commits.
const maxGroup = 1000

// LockWait is how long a group's git waits for the repository's lock, as the first
// attempt of an invocation on its own does. A group that cannot get the lock in that
// time is dissolved: each member then retries on its own, with its own budget.
const LockWait = time.Second

// requestWait bounds how long a leader waits for the request of a member it has
// accepted (members send it right after connecting).
const requestWait = time.Second

// revet is how long a leader trusts a predecessor's answer to whether a default
// group may be formed.
const revet = time.Second

// Lease is held by an invocation that runs its own update alone while others may
// queue behind it.
type Lease struct {
	l *platform.Listener
	b baton
}

// Release passes the line to the next invocation waiting in it, if any, else closes
// it. Call it once the update has run, whatever its result.
func (s *Lease) Release() {
	if s != nil {
		handOff(s.l, s.b)
	}
}

// entry is one update in a group: the leader's own (conn nil) or a member's.
type entry struct {
	req  request
	conn *platform.Conn
}

// lead is a member at the head of the line, holding the listening socket l.
func lead(ctx context.Context, m *member, l *platform.Listener, b baton) Outcome {
	queued := acceptQueued(l, maxGroup-1)
	if len(queued) == 0 {
		return Outcome{Lease: &Lease{l: l, b: b}}
	}
	own := entry{req: request{key: m.keyOf(), ref: m.c.Update.Ref, cmd: m.c.Update.command()}}
	if b.vetted.IsZero() || time.Since(b.vetted) > revet {
		b.allowed = !m.c.Default || m.c.Allowed == nil || m.c.Allowed()
		b.hook = b.allowed && m.c.Reftable && hasRefTxHook(ctx, m.c)
		b.vetted = time.Now()
	}
	if !b.allowed {
		tell(queued, msgAlone) // configuration says no: everyone alone
		handOff(l, b)
		return Outcome{}
	}
	// One transaction for the whole group where that is invisible (reftable, no
	// reference-transaction hook); otherwise one transaction per update, in one git.
	batch := m.c.Reftable && !b.hook
	group := []entry{own}
	refs := newRefSet()
	refs.add(own.req.ref)
	for _, e := range queued {
		if e.req.key != own.req.key || batch && refs.conflicts(e.req.ref) {
			tell([]entry{e}, msgAlone)
			continue
		}
		refs.add(e.req.ref)
		group = append(group, e)
	}
	out := commitGroup(ctx, m.c, group, batch)
	handOff(l, b)
	return out
}

// acceptQueued accepts up to max queued connections and reads their requests.
// Connections that send no valid request in time are told to look again.
func acceptQueued(l *platform.Listener, max int) []entry {
	var out []entry
	buf := make([]byte, maxMessage)
	for len(out) < max {
		c, err := l.Accept()
		if err != nil || c == nil {
			break
		}
		n, fds, err := c.Recv(buf, requestWait)
		closeFDs(fds)
		req, ok := decodeRequest(buf[:n])
		if err != nil || !ok {
			tell([]entry{{conn: c}}, msgAgain)
			continue
		}
		out = append(out, entry{req: req, conn: c})
	}
	return out
}

// tell sends each entry's member a final word and closes its connection. A member
// that cannot be told has left; what it was told before decides its outcome.
func tell(es []entry, kind byte) {
	for _, e := range es {
		if e.conn != nil {
			e.conn.Send([]byte{kind})
			e.conn.Close()
		}
	}
}

// handOff gives the listening socket to the next queued invocation, or closes it
// when none is queued (one that connects just then finds the line gone, and looks
// again).
func handOff(l *platform.Listener, b baton) {
	defer l.Close()
	msg := b.encode()
	buf := make([]byte, maxMessage)
	for {
		c, err := l.Accept()
		if err != nil || c == nil {
			return
		}
		// Its request is read (and set aside: the heir leads with it) before the
		// connection closes, as closing a socket with unread messages resets it,
		// and the reset would overtake the message that hands over the line.
		n, fds, err := c.Recv(buf, requestWait)
		closeFDs(fds)
		if err == nil && n > 0 {
			err = c.Send(msg, l.FD())
		} else {
			err = errors.New("no request")
		}
		c.Close()
		if err == nil {
			return
		}
	}
}

// commitGroup commits the group's updates with one git, the leader's own first, and
// tells every member its outcome; it returns the leader's.
//
// In a batch (one transaction for all), members git names as the cause of a failure
// run alone, and the others are committed again without them; any other failure,
// lock contention included, makes every member run alone: each then meets it with its
// own command, its own retries and its own output. With one transaction per update,
// git commits them in order and stops at the first that fails: those before it are
// applied, that one runs alone, and those after it go to the next git.
func commitGroup(ctx context.Context, c *Config, group []entry, batch bool) Outcome {
	var own Outcome
	for len(group) > 0 {
		if ctx.Err() != nil {
			tell(group, msgAgain)
			return own
		}
		res, in, err := runGroup(ctx, c, group, batch)
		if err != nil {
			tell(in, msgAlone)
			return own
		}
		done := commits(res.stdout)
		if !batch {
			// The first done updates are applied; the next one failed alone.
			for i, e := range in {
				switch {
				case i < done && e.conn == nil:
					own = Outcome{Applied: true, Stderr: res.stderr}
				case i < done:
					tell([]entry{e}, msgApplied)
				case i == done:
					tell([]entry{e}, msgAlone)
				}
			}
			group = in[min(done+1, len(in)):]
			continue
		}
		if done > 0 {
			for _, e := range in {
				if e.conn == nil {
					own = Outcome{Applied: true, Stderr: res.stderr}
				} else {
					tell([]entry{e}, msgApplied)
				}
			}
			return own
		}
		named := blamed(res.stderr, in)
		if len(named) == 0 || len(named) == len(in) {
			tell(in, msgAlone)
			return own
		}
		group = group[:0:0]
		for _, e := range in {
			if !named[e.req.ref] {
				group = append(group, e)
			} else {
				tell([]entry{e}, msgAlone)
			}
		}
	}
	return own
}

// commits counts the transactions git reports committed.
func commits(stdout []byte) int { return bytes.Count(stdout, []byte("commit: ok\n")) }

// result is what a group's git wrote.
type result struct{ stdout, stderr []byte }

// runGroup runs one git for group (its first entry may be the leader's own update),
// after telling each member it is in that git and at which place. It returns what git
// wrote and the entries it ran, in order (members that could not be told are left
// out); an error means nothing was applied.
func runGroup(ctx context.Context, c *Config, group []entry, batch bool) (result, []entry, error) {
	stdout, err := platform.MemFile("git-stdout")
	if err != nil {
		return result{}, nil, err
	}
	defer stdout.Close()
	stderr, err := platform.MemFile("git-stderr")
	if err != nil {
		return result{}, nil, err
	}
	defer stderr.Close()
	args := append([]string{"update-ref"}, c.Options.args()...)
	// Once started, the group's git runs to its end: a commit is not cut short
	// because its leader was interrupted, and it has a process group of its own so
	// that a signal to the leader's group does not reach it.
	cmd := gitexec.Command(context.WithoutCancel(ctx), c.Git, c.Dirs, c.Env, append(args, "--stdin", "-z")...)
	cmd.Env = gitexec.WithLockWait(cmd.Env, LockWait)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	platform.NewProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return result{}, nil, err
	}
	if err := cmd.Start(); err != nil {
		return result{}, nil, err
	}
	proc, err := platform.ProcessHandle(cmd.Process.Pid)
	if err != nil {
		stdin.Close()
		cmd.Wait()
		return result{}, nil, err
	}
	defer proc.Close()

	// Every member holds this git's output and the git itself, and knows its place
	// in git's input, before git reads anything: whatever happens to the leader from
	// here on, each can learn its outcome. A member that has left (or withdrew)
	// cannot be told, and is not in.
	var in []entry
	var input strings.Builder
	if batch {
		input.WriteString("start\x00")
	}
	fds := []int{int(stdout.Fd()), int(stderr.Fd()), int(proc.Fd())}
	for _, e := range group {
		place := 0
		if !batch {
			place = len(in)
		}
		if e.conn != nil && e.conn.Send(strconv.AppendInt([]byte{msgAttempt}, int64(place), 10), fds...) != nil {
			e.conn.Close()
			continue
		}
		in = append(in, e)
		if !batch {
			input.WriteString("start\x00")
		}
		input.WriteString(e.req.cmd)
		if !batch {
			input.WriteString("commit\x00")
		}
	}
	if batch {
		input.WriteString("commit\x00")
	}
	_, werr := io.WriteString(stdin, input.String())
	stdin.Close()
	if err := cmd.Wait(); err != nil && !isExit(err) {
		return result{}, in, err
	}
	if werr != nil && commits(readAll(stdout)) == 0 {
		return result{}, in, werr
	}
	return result{stdout: readAll(stdout), stderr: readAll(stderr)}, in, nil
}

func isExit(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee)
}

// blamed returns the refs among the entries that git's final message names.
func blamed(stderr []byte, es []entry) map[string]bool {
	lines := gitmsg.Lines(stderr)
	named := map[string]bool{}
	i := gitmsg.Final(lines)
	if i < 0 {
		return named
	}
	msg := lines[i]
	for _, e := range es {
		if strings.Contains(msg, "'"+e.req.ref+"'") || hasToken(msg, e.req.ref) {
			named[e.req.ref] = true
		}
	}
	return named
}

// hasToken reports whether s contains tok delimited by the start or end of s, a
// space, or ':'.
func hasToken(s, tok string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], tok)
		if j < 0 {
			return false
		}
		a, b := i+j, i+j+len(tok)
		before := a == 0 || s[a-1] == ' ' || s[a-1] == ':'
		after := b == len(s) || s[b] == ' ' || s[b] == ':'
		if before && after {
			return true
		}
		i = a + 1
	}
}

// hasRefTxHook reports whether git would run a reference-transaction hook in the
// repository; true when it cannot tell. `git hook list` (git 2.54+) knows hooks from
// the hooks directory and from configuration; older gits are asked for the hook's
// path, which honours core.hooksPath.
func hasRefTxHook(ctx context.Context, c *Config) bool {
	cmd := gitexec.Command(ctx, c.Git, c.Dirs, c.Env, "hook", "list", "reference-transaction")
	err := cmd.Run()
	if err == nil {
		return true
	}
	if code, ran := gitexec.ExitCode(cmd.ProcessState); ran && code == 1 {
		return false // "no hooks found"
	}
	out, err := gitexec.Command(ctx, c.Git, c.Dirs, c.Env,
		"rev-parse", "--path-format=absolute", "--git-path", "hooks/reference-transaction").Output()
	if err != nil {
		return true
	}
	fi, err := os.Stat(strings.TrimRight(string(out), "\n"))
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	return err != nil || fi.Mode()&0o111 != 0
}

// refSet holds a group's refs, to keep out a second update of one ref and the pairs
// git refuses in one transaction (refs/a beside refs/a/b).
type refSet struct {
	refs, dirs map[string]bool
}

func newRefSet() *refSet { return &refSet{refs: map[string]bool{}, dirs: map[string]bool{}} }

func (s *refSet) add(ref string) {
	s.refs[ref] = true
	for i := strings.IndexByte(ref, '/'); i >= 0; {
		s.dirs[ref[:i]] = true
		j := strings.IndexByte(ref[i+1:], '/')
		if j < 0 {
			break
		}
		i += 1 + j
	}
}

func (s *refSet) conflicts(ref string) bool {
	if s.refs[ref] || s.dirs[ref] {
		return true
	}
	for i := strings.IndexByte(ref, '/'); i >= 0; {
		if s.refs[ref[:i]] {
			return true
		}
		j := strings.IndexByte(ref[i+1:], '/')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return false
}
