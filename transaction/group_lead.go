//go:build unix

package transaction

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/refretry/refretry/internal/gitexec"
)

// errCrash is what a test's fault hook returns to stop a leader on the spot.
var errCrash = errors.New("coalescing: simulated crash")

// errRegroup ends a group attempt whose failure git pinned on some members: they run
// alone, and the others are committed again without them.
var errRegroup = errors.New("coalescing: some members failed; committing the others")

// errSettle marks a failure to record the outcome of a committed group: recovery
// settles it from git's stdout.
var errSettle = errors.New("coalescing: cannot record the outcome of a committed group")

// lead forms a group around this invocation's update (itself first, then compatible
// pending updates, oldest first) and commits it. On return every member has an
// outcome, or is pending again; only a crash or an unrecordable outcome (which
// recovery settles) leaves claims behind.
func (g *grouper) lead(ctx context.Context) error {
	now := time.Now()
	g.st.housekeep(now)
	pend, err := g.st.pending(now)
	if err != nil {
		return err
	}
	var members []pendingEntry
	for _, p := range pend {
		if p.ID == g.id {
			members = append(members, p)
		}
	}
	if len(members) == 0 {
		return errors.New("coalescing: own update not pending")
	}
	refs := newRefSet()
	refs.add(g.u.Ref)
	for _, p := range pend {
		if len(members) >= maxGroup {
			break
		}
		if p.ID == g.id || p.Key != g.key || refs.conflicts(p.Update.Ref) {
			continue
		}
		refs.add(p.Update.Ref)
		members = append(members, p)
	}
	claimed := members[:0]
	for _, m := range members {
		ok, err := g.st.claim(m.ID)
		if err != nil {
			for _, c := range claimed {
				g.st.unclaim(c.ID)
			}
			return err
		}
		if ok {
			claimed = append(claimed, m)
		}
		if err := g.st.step("claim"); err != nil {
			return err
		}
	}
	defer g.st.moved()
	return g.commit(ctx, claimed)
}

// commit commits the claimed members in one git, retrying lock contention with the
// leader's budget, and dropping members git names as the cause of another failure.
func (g *grouper) commit(ctx context.Context, members []pendingEntry) error {
	for len(members) > 0 {
		var rest []pendingEntry
		_, err := g.r.retrier(ctx).Do(ctx, func(ctx context.Context, n int) error {
			var err error
			rest, err = g.attempt(ctx, members, n)
			return err
		})
		switch {
		case err == nil:
			return nil
		case errors.Is(err, errRegroup):
			members = rest
			continue
		case errors.Is(err, errCrash), errors.Is(err, errSettle):
			return err
		case ctx.Err() != nil:
			// Interrupted between attempts: nothing of this group is applied.
			for _, m := range members {
				g.st.unclaim(m.ID)
			}
			return ctx.Err()
		}
		// The budget is spent, the lock is stale, git cannot start, or the store
		// failed before git got the input: nothing is applied, and each member
		// runs alone, to meet the same failure with its own command's output.
		for _, m := range members {
			if err := g.st.solo(m.ID); err != nil {
				g.st.unclaim(m.ID)
			}
		}
		return nil
	}
	return nil
}

// attempt runs one git for the group. It returns nil when the group was applied
// (every member settled), a lock-contention *Error to be retried, errRegroup with the
// members still to commit, or another error when nothing was applied.
func (g *grouper) attempt(ctx context.Context, members []pendingEntry, n int) ([]pendingEntry, error) {
	st := g.st
	ids := make([]string, len(members))
	var input strings.Builder
	input.WriteString("start\x00")
	for i, m := range members {
		ids[i] = m.ID
		input.WriteString(m.Update.command())
	}
	input.WriteString("commit\x00")
	gid := newID()
	if err := st.writeGroup(gid, groupRecord{Members: ids, Input: input.String(), Leader: self()}); err != nil {
		st.dropGroup(gid)
		return nil, err
	}
	if err := st.step("record"); err != nil {
		return nil, err
	}
	cmd, stdin, err := g.startGit(ctx, gid, n)
	if err != nil {
		st.dropGroup(gid)
		return nil, err
	}
	crashed := func(err error) ([]pendingEntry, error) {
		stdin.Close()              // as the kernel closes a dead leader's pipe
		go func() { cmd.Wait() }() // reaped as init would
		return nil, err
	}
	if err := st.step("started"); err != nil {
		return crashed(err)
	}
	if err := st.writeGroupPID(gid, procOf(cmd.Process.Pid)); err != nil {
		// git has had no input: at EOF it applies nothing.
		stdin.Close()
		cmd.Wait()
		st.dropGroup(gid)
		return nil, err
	}
	if err := st.step("pid"); err != nil {
		return crashed(err)
	}
	in := input.String()
	cut := len("start\x00") + len(members[0].Update.command())
	_, werr := io.WriteString(stdin, in[:cut])
	if err := st.step("input-partial"); err != nil {
		return crashed(err)
	}
	if werr == nil {
		_, werr = io.WriteString(stdin, in[cut:])
	}
	stdin.Close()
	if err := st.step("input"); err != nil {
		return crashed(err)
	}
	runErr := cmd.Wait()
	if err := st.step("exited"); err != nil {
		return nil, err
	}
	out, _ := os.ReadFile(st.path(dirGroups, gid+".out"))
	errOut, _ := os.ReadFile(st.path(dirGroups, gid+".err"))
	if committed(out) {
		if err := st.settle(ids, errOut); err != nil {
			if errors.Is(err, errCrash) {
				return nil, err
			}
			return nil, fmt.Errorf("%w: %w", errSettle, err)
		}
		me := self().PID
		for _, m := range members {
			if m.Proc.PID != me {
				syscall.Kill(m.Proc.PID, wakeSignal)
			}
		}
		st.dropGroup(gid)
		return nil, st.step("dropped")
	}
	st.dropGroup(gid)
	tail := errOut
	if len(tail) > classifyTail {
		tail = tail[len(tail)-classifyTail:]
	}
	_, gitErr := g.r.outcome(ctx, cmd, runErr, tail)
	var e *Error
	if errors.As(gitErr, &e) && e.Class == ClassLockContention {
		return nil, e
	}
	if gitErr == nil && werr != nil {
		gitErr = werr
	}
	if !errors.As(gitErr, &e) {
		if gitErr == nil {
			gitErr = errors.New("coalescing: git exited without committing")
		}
		return nil, gitErr // every member runs alone
	}
	named := blamed(errOut, members)
	if len(named) == 0 || len(named) == len(members) {
		return nil, gitErr
	}
	var rest []pendingEntry
	for _, m := range members {
		if named[m.ID] {
			if err := st.solo(m.ID); err != nil {
				return nil, err
			}
		} else {
			rest = append(rest, m)
		}
	}
	return rest, errRegroup
}

// startGit starts the group's git: update-ref --stdin -z with the group's options,
// its stdout and stderr going to files that outlive the leader, in a process group
// of its own so that a signal to the leader's group does not cut a commit short. It
// is not tied to ctx: once started, a commit runs to its end.
func (g *grouper) startGit(ctx context.Context, gid string, n int) (*exec.Cmd, io.WriteCloser, error) {
	st := g.st
	out, err := os.Create(st.path(dirGroups, gid+".out"))
	if err != nil {
		return nil, nil, err
	}
	defer out.Close()
	errOut, err := os.Create(st.path(dirGroups, gid+".err"))
	if err != nil {
		return nil, nil, err
	}
	defer errOut.Close()
	args := append([]string{"update-ref"}, g.opts.args()...)
	cmd := g.r.command(context.WithoutCancel(ctx), append(args, "--stdin", "-z")...)
	ms := strconv.FormatInt(g.r.window(n).Milliseconds(), 10)
	cmd.Env = gitexec.WithConfig(cmd.Env,
		[2]string{"reftable.lockTimeout", ms},
		[2]string{"core.filesRefLockTimeout", ms},
		[2]string{"core.packedRefsTimeout", ms})
	cmd.Stdout, cmd.Stderr = out, errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		_, ferr := finish(cmd, err, nil)
		return nil, nil, ferr
	}
	return cmd, stdin, nil
}

// blamed returns the members whose ref git's final message names.
func blamed(stderr []byte, members []pendingEntry) map[string]bool {
	lines := strings.Split(strings.TrimRight(string(stderr), "\n"), "\n")
	msg := ""
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "fatal: ") || strings.HasPrefix(lines[i], "error: ") {
			msg = lines[i]
			break
		}
	}
	named := map[string]bool{}
	if msg == "" {
		return named
	}
	for _, m := range members {
		if strings.Contains(msg, "'"+m.Update.Ref+"'") || hasToken(msg, m.Update.Ref) {
			named[m.ID] = true
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
