//go:build linux

package group

import (
	"bytes"
	"context"
	"encoding/binary"
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

// requestWait bounds how long a leader waits for the request of a member it has
// accepted (members send it right after connecting).
const requestWait = time.Second

// revet is how long a leader trusts a predecessor's answer to whether a default
// group may be formed, and whether a hook rules out one transaction for a group,
// before it asks again (beside its own group's git: see lead).
const revet = time.Second

// Lease is held by an invocation that runs its own update alone, the usual way,
// holding the line: others queue behind it meanwhile.
type Lease struct {
	l *platform.Listener
	b baton
	// pending are members a leader told to run alone too: each gets the line in
	// turn before the queue does, so that their own runs meet no group's git.
	pending []*platform.Conn
}

// Release passes the line on: to the next member that must run alone, else to the
// next invocation waiting in the queue, else nobody (the line is closed). Call it
// once the update has run, whatever its result.
func (s *Lease) Release() {
	if s != nil && s.l != nil {
		passLine(s.l, s.b, s.pending, os.Getuid())
		s.l, s.pending = nil, nil
	}
}

// entry is one update in a group: the leader's own (conn nil) or a member's.
type entry struct {
	req  request
	conn *platform.Conn
}

// lead is a member at the head of the line, holding the listening socket l: it
// commits its own update with what is queued, and passes the line on.
func lead(ctx context.Context, m *member, l *platform.Listener, b baton) Outcome {
	uid := os.Getuid()
	queued := acceptQueued(l, maxGroup-1, uid)
	if len(queued) == 0 {
		return Outcome{Lease: &Lease{l: l, b: b}}
	}
	b, passed := revetted(ctx, m.c, b)
	if !b.allowed {
		tell(queued, msgAlone) // configuration says no: everyone on their own
		handOff(l, passed(), uid)
		return Outcome{}
	}
	own := entry{req: m.request()}
	alone, same := partition(own, queued, b.hook)
	if len(same) == 0 {
		return Outcome{Lease: &Lease{l: l, b: passed(), pending: conns(alone)}}
	}
	// One transaction for a whole group where that is invisible (reftable, no
	// reference-transaction hook); otherwise one transaction per update, in one git.
	batch := m.c.Store.Reftable() && !b.hook
	out, ownAlone, more := commitGroups(ctx, m.c, append([]entry{own}, same...), batch)
	alone = append(alone, more...)
	if ownAlone {
		return Outcome{Lease: &Lease{l: l, b: passed(), pending: conns(alone)}}
	}
	passLine(l, passed(), conns(alone), uid)
	return out
}

// revetted is the baton a leader commits on, and a function giving the baton the
// next leader gets. The first group of a line asks before it commits. A later one
// whose answer is older than revet commits on it and asks again beside its own git,
// for the groups after it: on a loaded machine every group's commit takes longer than
// revet, and asking first put three gits one after another on every group's path.
func revetted(ctx context.Context, c *Config, b baton) (baton, func() baton) {
	var next chan baton
	switch {
	case b.vetted.IsZero():
		b = vet(ctx, c)
	case time.Since(b.vetted) > revet:
		next = make(chan baton, 1)
		go func() { next <- vet(ctx, c) }()
	}
	return b, func() baton {
		if next != nil {
			b, next = <-next, nil
		}
		return b
	}
}

// partition splits the queued entries into those that must run alone and those that
// may share a git with own. A hook sees the environment of the git that runs it: with
// one, members share a git only if their whole environment is the leader's.
func partition(own entry, queued []entry, hook bool) (alone, same []entry) {
	for _, e := range queued {
		if e.req.key != own.req.key || hook && e.req.env != own.req.env {
			alone = append(alone, e)
		} else {
			same = append(same, e)
		}
	}
	return alone, same
}

// commitGroups commits the entries, the leader's own first, each set of command-line
// options in a git of its own, the leader's first. It returns the leader's outcome if
// its update was applied, whether the leader must run its update alone, and the
// members that must.
func commitGroups(ctx context.Context, c *Config, es []entry, batch bool) (out Outcome, ownAlone bool, alone []entry) {
	for _, g := range byOptions(es) {
		applied, left, interrupted := commitGroup(ctx, c, g, batch)
		for _, e := range left {
			if e.conn == nil {
				ownAlone = true
			} else {
				alone = append(alone, e)
			}
		}
		if applied != nil {
			out = *applied
		}
		if interrupted {
			break
		}
	}
	return out, ownAlone, alone
}

// vet asks whether configuration allows a default group and whether the repository
// has a reference-transaction hook: two gits, one beside the other.
func vet(ctx context.Context, c *Config) baton {
	hook := make(chan bool, 1)
	go func() { hook <- hasRefTxHook(ctx, c) }()
	allowed := !c.Default || c.Allowed == nil || c.Allowed()
	return baton{vetted: time.Now(), allowed: allowed, hook: <-hook && allowed}
}

// byOptions splits a group by command-line options, keeping the order of the queue,
// the first entry's options first.
func byOptions(es []entry) [][]entry {
	var groups [][]entry
	index := map[Options]int{}
	for _, e := range es {
		i, ok := index[e.req.opts]
		if !ok {
			i = len(groups)
			index[e.req.opts] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], e)
	}
	return groups
}

func conns(es []entry) []*platform.Conn {
	cs := make([]*platform.Conn, 0, len(es))
	for _, e := range es {
		cs = append(cs, e.conn)
	}
	return cs
}

// passLine gives the line to the first of pending that is still there and of user
// uid, with the rest of pending (it runs alone, then passes the line on the same
// way), or, with nobody pending, to the queue.
func passLine(l *platform.Listener, b baton, pending []*platform.Conn, uid int) {
	for len(pending) > 0 {
		c, rest := pending[0], pending[1:]
		if !trusted(c, uid) {
			c.Close()
			pending = rest
			continue
		}
		if len(rest) > maxPending {
			for _, extra := range rest[maxPending:] {
				tell([]entry{{conn: extra}}, msgAlone)
			}
			rest = rest[:maxPending]
		}
		fds := []int{l.FD()}
		for _, r := range rest {
			fds = append(fds, r.FD())
		}
		msg := b.encode()
		msg[0] = msgHold
		err := c.Send(msg, fds...)
		c.Close()
		if err == nil {
			for _, r := range rest {
				r.Close()
			}
			l.Close()
			return
		}
		pending = rest
	}
	handOff(l, b, uid)
}

// acceptQueued accepts up to max queued connections of user uid and reads their requests. Every
// connection accepted counts against max, so a flood of connections cannot keep a
// leader accepting. A connection from another user is closed unread; one whose
// request is not one update of the ref it names (decodeRequest) gets no answer but
// the close; one that sends nothing in time is told to look again.
func acceptQueued(l *platform.Listener, max, uid int) []entry {
	var out []entry
	buf := make([]byte, maxMessage)
	for accepted := 0; accepted < max; accepted++ {
		c, err := l.Accept()
		if err != nil || c == nil {
			break
		}
		if !trusted(c, uid) {
			c.Close()
			continue
		}
		n, fds, err := c.Recv(buf, requestWait)
		closeFDs(fds)
		if err != nil {
			tell([]entry{{conn: c}}, msgAgain)
			continue
		}
		req, ok := decodeRequest(buf[:n])
		if !ok {
			c.Close()
			continue
		}
		out = append(out, entry{req: req, conn: c})
	}
	return out
}

// trusted reports whether the process that connected c is of user uid: a leader
// passes its own, the only user whose connections it accepts. (A test passes
// another, to see every peer as foreign.)
// The name is public and abstract sockets have no permissions: any process in the
// network namespace can connect, and the listening socket, the git's output files and
// process descriptor must never reach another user's process.
func trusted(c *platform.Conn, uid int) bool {
	peer, err := c.PeerUID()
	return err == nil && peer == uid
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

// handOff gives the listening socket to the next queued invocation of user uid (the
// leader's), or closes it when none is queued (one that connects just then finds the line
// gone, and looks again). It accepts at most maxGroup connections: past that (a
// flood of foreign ones) it closes the line too, and those queued look again.
func handOff(l *platform.Listener, b baton, uid int) {
	defer l.Close()
	msg := b.encode()
	buf := make([]byte, maxMessage)
	for accepted := 0; accepted < maxGroup; accepted++ {
		c, err := l.Accept()
		if err != nil || c == nil {
			return
		}
		if !trusted(c, uid) {
			c.Close()
			continue
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

// commitGroup commits a group whose entries share their options, the leader's own
// first if it is in it. It tells each member whose update it applied; it returns the
// leader's outcome if that was applied, the entries that must run alone, and whether
// it was interrupted (the members not yet settled were then told to look again).
func commitGroup(ctx context.Context, c *Config, group []entry, batch bool) (own *Outcome, alone []entry, interrupted bool) {
	if batch {
		return commitBatch(ctx, c, group)
	}
	return commitEach(ctx, c, group)
}

// settled tells a member its update was applied (or records the leader's own).
func settled(e entry, stderr []byte, to int64, own **Outcome) {
	if e.conn == nil {
		*own = &Outcome{Applied: true, Stderr: stderr}
		return
	}
	msg := []byte{msgApplied}
	if to >= 0 {
		msg = strconv.AppendInt(msg, to, 10)
	}
	e.conn.Send(msg)
	e.conn.Close()
}

// commitBatch commits the group as one transaction. Entries git names as the cause
// of a failure run alone, and the others are committed again without them; any other
// failure, lock contention included, makes every entry run alone: each then meets it
// with its own command, its own retries and its own output. Two updates git refuses
// in one transaction (one ref twice, or refs/a beside refs/a/b) run alone.
func commitBatch(ctx context.Context, c *Config, group []entry) (own *Outcome, alone []entry, interrupted bool) {
	refs := newRefSet()
	var in []entry
	for _, e := range group {
		if refs.conflicts(e.req.ref) {
			alone = append(alone, e)
			continue
		}
		refs.add(e.req.ref)
		in = append(in, e)
	}
	group = in
	for len(group) > 0 {
		if ctx.Err() != nil {
			tell(group, msgAgain)
			return own, alone, true
		}
		g, err := startGit(ctx, c, group[0].req.opts)
		if err != nil {
			return own, append(alone, group...), false
		}
		// Every member is told before git reads anything (see gitRun.tell).
		in := group[:0:0]
		input := "start\x00"
		for _, e := range group {
			if e.conn == nil || g.tell(e, 0, 0) {
				in = append(in, e)
				input += e.req.cmd
			}
		}
		g.write(input + "commit\x00")
		g.close()
		if g.commits >= 1 {
			for _, e := range in {
				settled(e, g.stderrFrom(0, -1), -1, &own)
			}
			return own, alone, false
		}
		named := blamed(g.stderrFrom(0, -1), in)
		if len(named) == 0 || len(named) == len(in) {
			return own, append(alone, in...), false
		}
		group = group[:0:0]
		for _, e := range in {
			if named[e.req.ref] {
				alone = append(alone, e)
			} else {
				group = append(group, e)
			}
		}
	}
	return own, alone, false
}

// commitEach commits each update as a transaction of its own, in order, in one git,
// as separate gits would have: git stops at the first that fails, which then runs
// alone, and those after it go to the next git. Each transaction is given to git only
// once the one before it is committed, so that what git wrote on its standard error
// meanwhile (a hook's output) goes to the invocation it belongs to.
func commitEach(ctx context.Context, c *Config, group []entry) (own *Outcome, alone []entry, interrupted bool) {
	for len(group) > 0 {
		g, err := startGit(ctx, c, group[0].req.opts)
		if err != nil {
			return own, append(alone, group...), false
		}
		next, failed := len(group), -1
		for i, e := range group {
			if ctx.Err() != nil {
				next = i
				break
			}
			from := g.stderrSize()
			if e.conn != nil && !g.tell(e, g.given, from) {
				continue // it left: not in this git
			}
			g.given++
			if g.write("start\x00"+e.req.cmd+"commit\x00") != nil || !g.await(g.given) {
				failed = i
				break
			}
			to := g.stderrSize()
			g.recordEnd(to)
			settled(e, g.stderrFrom(from, to), to, &own)
		}
		g.close()
		switch {
		case failed >= 0:
			alone = append(alone, group[failed])
			group = group[failed+1:]
		case next < len(group):
			tell(group[next:], msgAgain)
			return own, alone, true
		default:
			return own, alone, false
		}
	}
	return own, alone, false
}

// gitRun is one group's git: `git update-ref [options] --stdin -z`, its stdout and
// stderr in memory files and a process descriptor of it, which members receive.
type gitRun struct {
	cmd                  *exec.Cmd
	stdin                io.WriteCloser
	stdout, stderr, proc *os.File
	// ends holds, for each transaction committed one at a time (commitEach), where
	// git's stderr for it ended: 8 bytes each, in order. A member that must settle
	// without the leader's word reads its own there, so that it never takes the
	// stderr of the transactions given after it.
	ends    *os.File
	given   int    // transactions given to git (commitEach)
	commits int    // "commit: ok" lines seen on stdout
	scanned int64  // how much of stdout has been read for them
	errOut  []byte // all of stderr, once git has ended
}

// startGit starts a group's git. Once started it runs to its end: a commit is not
// cut short because its leader was interrupted, and it has a process group of its
// own, so that a signal to the leader's group does not reach it.
func startGit(ctx context.Context, c *Config, opts Options) (*gitRun, error) {
	g := &gitRun{}
	var err error
	if g.stdout, err = platform.MemFile("git-stdout"); err != nil {
		return nil, err
	}
	if g.stderr, err = platform.MemFile("git-stderr"); err != nil {
		g.stdout.Close()
		return nil, err
	}
	if g.ends, err = platform.MemFile("git-stderr-ends"); err != nil {
		g.stdout.Close()
		g.stderr.Close()
		return nil, err
	}
	args := append(append([]string{"update-ref"}, opts.args()...), "--stdin", "-z")
	g.cmd = gitexec.Command(context.WithoutCancel(ctx), c.Git, c.Dirs, c.Env, args...)
	// As long as the first attempt of an invocation on its own waits. A group that
	// cannot get the lock in that time is dissolved: each member then retries on its
	// own, with its own budget.
	g.cmd.Env = gitexec.WithLockWait(g.cmd.Env, gitexec.FirstLockWait)
	g.cmd.Stdout, g.cmd.Stderr = g.stdout, g.stderr
	platform.NewProcessGroup(g.cmd)
	if g.stdin, err = g.cmd.StdinPipe(); err == nil {
		if err = g.cmd.Start(); err == nil {
			if g.proc, err = platform.ProcessHandle(g.cmd.Process.Pid); err != nil {
				g.stdin.Close()
				g.cmd.Wait()
			}
		}
	}
	if err != nil {
		g.stdout.Close()
		g.stderr.Close()
		g.ends.Close()
		return nil, err
	}
	return g, nil
}

// tell tells a member that its update is this git's transaction number place (from
// 0), and where this git's stderr for it begins, giving it git's output files and
// git itself: from now on the member can learn its outcome whatever happens to the
// leader. It must come before git is given the update. false means the member has
// left (or withdrew) and is not in; its connection is closed.
func (g *gitRun) tell(e entry, place int, errFrom int64) bool {
	msg := strconv.AppendInt([]byte{msgAttempt}, int64(place), 10)
	msg = strconv.AppendInt(append(msg, ' '), errFrom, 10)
	if e.conn.Send(msg, int(g.stdout.Fd()), int(g.stderr.Fd()), int(g.proc.Fd()), int(g.ends.Fd())) != nil {
		e.conn.Close()
		return false
	}
	return true
}

// recordEnd records where git's stderr for the transaction just committed ends.
func (g *gitRun) recordEnd(to int64) {
	g.ends.Write(binary.LittleEndian.AppendUint64(nil, uint64(to)))
}

func (g *gitRun) write(s string) error {
	_, err := io.WriteString(g.stdin, s)
	return err
}

// await waits until git has reported n commits, or has ended; it reports whether it
// reported them.
func (g *gitRun) await(n int) bool {
	pause := 50 * time.Microsecond
	for {
		g.scan()
		if g.commits >= n {
			return true
		}
		if ended, err := platform.WaitExited(g.proc, pause); ended || err != nil {
			g.scan()
			return g.commits >= n
		}
		pause = min(2*pause, 2*time.Millisecond)
	}
}

// scan counts the "commit: ok" lines git has written since the last scan.
func (g *gitRun) scan() {
	buf := make([]byte, 4096)
	for {
		k, _ := g.stdout.ReadAt(buf, g.scanned)
		line := buf[:k]
		end := bytes.LastIndexByte(line, '\n')
		if end < 0 {
			return // only a partial line, if anything: wait for the rest
		}
		g.commits += commits(line[:end+1])
		g.scanned += int64(end + 1)
		if k < len(buf) {
			return
		}
	}
}

func (g *gitRun) stderrSize() int64 {
	fi, err := g.stderr.Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}

// stderrFrom reads git's stderr from offset from to offset to (-1: the end).
func (g *gitRun) stderrFrom(from, to int64) []byte {
	b := g.errOut
	if b == nil {
		b = readAll(g.stderr)
	}
	if to < 0 || to > int64(len(b)) {
		to = int64(len(b))
	}
	if from > to {
		return nil
	}
	return b[from:to]
}

// close ends git's input, waits for git, counts its commits and keeps its stderr.
func (g *gitRun) close() {
	g.stdin.Close()
	g.cmd.Wait()
	g.scan()
	g.errOut = readAll(g.stderr)
	if g.errOut == nil {
		g.errOut = []byte{}
	}
	g.stdout.Close()
	g.stderr.Close()
	g.ends.Close()
	g.proc.Close()
}

// commits counts the transactions git reports committed.
func commits(stdout []byte) int { return bytes.Count(stdout, []byte("commit: ok\n")) }

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

// Name is the rendezvous point of the ref store in this directory (repo.Store.Dir): a
// process that listens there holds the line (tests use it to let invocations queue).
func Name(storeDir string) (string, bool) { return rendezvousName(storeDir) }

// HandOver passes the line held by l (listening at Name) to the next waiting
// invocation, which then leads everyone queued behind it; with nobody waiting, it
// closes l.
func HandOver(l *platform.Listener) { handOff(l, baton{}, os.Getuid()) }
