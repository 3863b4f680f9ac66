package gather

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/httpconf"
	"github.com/refretry/refretry/internal/replay"
	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/transaction"
)

// Defaults of the Runner's limits.
const (
	DefaultMaxPerWave   = 64
	DefaultLeaseTimeout = 30 * time.Second
	// freeGrace is how long a waiter lets a free lease be before it tries to take
	// it although its staged commit is not the oldest: the oldest one's job may be
	// gone.
	freeGrace = 2 * time.Second
	// The interval between two looks at the remote grows from pollMin by half each
	// time, up to pollMax, or one second per pollPerSecond staged commits when that is
	// longer (each look is a request to the server, and every waiting job makes them),
	// with ±50 % jitter.
	pollMin       = 100 * time.Millisecond
	pollMax       = time.Second
	pollPerSecond = 64
	pollCap       = 4 * time.Second
)

// Runner lands one job's commit on a branch of a remote through a gather (see the
// package comment). Its fields are its configuration, which Run only reads.
type Runner struct {
	Git  string   // git executable ("" means "git")
	Dirs []string // -C directories, in order
	Env  []string // the caller's whole environment

	Remote string // the remote: a name or a URL, as git push takes it
	Branch string // the branch to land on: "main" or "refs/heads/main"
	Source string // what to land: "HEAD", a branch, a commit ("" means HEAD)
	// PushOptions are git push options given to every push (e.g. "-o", "ci.skip").
	PushOptions []string

	// MaxPerWave bounds the staged commits one gather takes, and so the refs one push
	// updates (forges cap them); 0 means DefaultMaxPerWave.
	MaxPerWave int
	// LeaseTimeout is how long a lease may stay unchanged before a waiter takes it
	// over; 0 means DefaultLeaseTimeout.
	LeaseTimeout time.Duration
	// Settings supplies the budget (its policy's Timeout bounds the whole run; the
	// staging push is retried on its schedule). nil means retry.DefaultPolicy.
	Settings func() (transaction.Settings, error)

	// Stderr receives git's output when a push fails for good.
	Stderr io.Writer
	// Note, if set, is told what happened (staged, gathered, landed, a lease taken
	// over, a staged commit that is old), as a kind ("gather") and a line.
	Note func(kind, msg string)
	// OnAttempt, if set, is called after every attempt of the staging push.
	OnAttempt func(retry.Attempt)
}

// Result is what a Run did.
type Result struct {
	ID       string // the staged id ("" when nothing was staged)
	Staged   string // the staged commit
	Landed   bool   // the commit is on the branch
	Gathered int    // commits this job's own gathers landed, its own included
	Waves    int    // gathers this job ran that landed something
	Pushes   int    // pushes this job made (staging, leases, gathers)
}

// ConflictError is a job whose staged commit does not replay onto the branch: a
// gatherer moved it to the conflict namespace (Ref), and this job's replay found
// these paths in conflict.
type ConflictError struct {
	Commit string
	Ref    string
	Paths  []string
	Onto   string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("the staged commit %s does not replay onto the branch's tip %s: conflict in %s",
		replay.Short(e.Commit), replay.Short(e.Onto), strings.Join(e.Paths, ", "))
}

// NotLandedError is a run whose budget ended before any gather took its commit. The
// commit stays staged: it lands with the next gather (another job's, or `refretry
// gather land`), unless it is discarded.
type NotLandedError struct {
	Ref     string
	Commit  string
	Elapsed time.Duration
	Reason  string
}

func (e *NotLandedError) Error() string {
	return fmt.Sprintf("%s (%s) has not landed after %v (%s); it stays staged and lands with the next gather",
		e.Ref, replay.Short(e.Commit), e.Elapsed.Round(time.Millisecond), e.Reason)
}

// DiscardedError is a staged commit that `refretry gather discard` removed.
type DiscardedError struct{ Ref, Commit string }

func (e *DiscardedError) Error() string {
	return fmt.Sprintf("%s (%s) was discarded (refretry gather discard) before it landed", e.Ref, replay.Short(e.Commit))
}

// run is one Run's state.
type run struct {
	*Runner
	n        names
	repo     replay.Repo
	http     httpconf.Settings
	env      []string
	policy   retry.Policy
	start    time.Time
	res      Result
	lastPush gitexec.Captured
	perWave  int  // staged commits a gather takes (halved when a remote refuses as many)
	shallow  bool // the repository is a shallow clone
	err      error
}

// Run stages the job's commit and waits until it is on the branch, gathering when
// elected. It returns a *ConflictError, *NotLandedError or *DiscardedError when the
// commit did not land, a *push.Error (or a retry error wrapping one) when it could not
// be staged, and other errors for what went wrong on the way.
func (r *Runner) Run(ctx context.Context) (Result, error) {
	u := r.newRun(ctx)
	if u.err != nil {
		return u.res, u.err
	}
	defer u.cleanup()
	commit, done, err := u.prepare(ctx)
	if err != nil || done {
		u.res.Landed = done
		return u.res, err
	}
	if err := u.stage(ctx, commit); err != nil {
		return u.res, err
	}
	return u.res, u.wait(ctx)
}

// newRun is a run's state for r; its err says why it cannot run (the policy, an old
// git).
func (r *Runner) newRun(ctx context.Context) *run {
	u := &run{Runner: r, n: newNames(r.Branch), start: time.Now(), perWave: r.maxPerWave()}
	u.repo = replay.Repo{Git: r.git(), Dirs: r.Dirs, Env: r.Env}
	u.http = httpconf.Look(ctx, r.git(), r.Dirs, r.Env, r.Remote, httpconf.Floor{})
	u.env = u.http.Env(r.Env)
	if u.policy, u.err = r.policyOrDefault(); u.err != nil {
		return u
	}
	if !u.repo.AtLeast(ctx, 2, 40) {
		u.err = fmt.Errorf("gather needs git 2.40 or later (merge-tree --merge-base); %s is %s",
			r.git(), gitexec.Version(ctx, r.git(), r.Env))
		return u
	}
	shallow, _ := u.repo.Output(ctx, "rev-parse", "--is-shallow-repository")
	u.shallow = shallow == "true"
	return u
}

// cleanup removes the local refs the run fetched into (refs/refretry/fetched/).
func (u *run) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := u.repo.Output(ctx, "for-each-ref", "--format=delete %(refname)", "refs/refretry/fetched/")
	if err != nil || out == "" {
		return
	}
	cmd := u.repo.Command(ctx, u.Env, "update-ref", "--stdin")
	cmd.Stdin = strings.NewReader(out + "\n")
	_ = cmd.Run() // best effort: they are refretry's own, and harmless
}

func (r *Runner) git() string {
	if r.Git == "" {
		return "git"
	}
	return r.Git
}

func (r *Runner) policyOrDefault() (retry.Policy, error) {
	if r.Settings == nil {
		return retry.DefaultPolicy(), nil
	}
	s, err := r.Settings()
	return s.Policy, err
}

func (r *Runner) notify(format string, a ...any) {
	if r.Note != nil {
		r.Note("gather", fmt.Sprintf(format, a...))
	}
}

func (r *Runner) maxPerWave() int {
	if r.MaxPerWave > 0 {
		return r.MaxPerWave
	}
	return DefaultMaxPerWave
}

func (r *Runner) leaseTimeout() time.Duration {
	if r.LeaseTimeout > 0 {
		return r.LeaseTimeout
	}
	return DefaultLeaseTimeout
}

func (u *run) stderr() io.Writer {
	if u.Stderr != nil {
		return u.Stderr
	}
	return io.Discard
}

// left is what the budget has left.
func (u *run) left() time.Duration {
	if u.policy.Timeout <= 0 {
		return time.Hour
	}
	return u.policy.Timeout - time.Since(u.start)
}

// prepare works out the one commit to stage: the source itself when it is one commit
// on the remote tip it started from, else its changes squashed into one. done is true
// when the branch already has the source.
func (u *run) prepare(ctx context.Context) (commit string, done bool, err error) {
	source := u.Source
	if source == "" {
		source = "HEAD"
	}
	src := u.repo.RevParse(ctx, source+"^{commit}")
	if src == "" {
		return "", false, fmt.Errorf("%s is not a commit", source)
	}
	// A depth-1 checkout's one commit sits on the shallow boundary: its parent is the
	// remote tip it started from, with no need to ask the remote.
	// (Unless the remote is known to have the commit itself: a remote-tracking ref
	// contains it.)
	if parent := u.repo.RevParse(ctx, src+"^1"); parent != "" && u.isShallowBoundary(ctx, parent) &&
		u.repo.RevParse(ctx, src+"^2") == "" && !u.tracked(ctx, src) {
		return src, false, nil
	}
	tip, err := u.fetch(ctx, []string{u.n.head()}, 0)
	if err != nil {
		return "", false, err
	}
	base, err := u.repo.Output(ctx, "merge-base", src, tip[0])
	if err != nil || base == "" {
		return "", false, fmt.Errorf("%s has no commit in common with the remote's %s", source, u.n.head())
	}
	count, _ := u.repo.Output(ctx, "rev-list", "--count", src, "^"+base)
	switch count {
	case "0":
		u.notify("%s is on %s already", replay.Short(src), u.n.branch)
		return "", true, nil
	case "1":
		if u.repo.RevParse(ctx, src+"^1") == base && u.repo.RevParse(ctx, src+"^2") == "" {
			return src, false, nil
		}
	}
	// Several commits: one commit with the last one's tree, author and message.
	info, err := u.repo.ReadCommit(ctx, src)
	if err != nil {
		return "", false, err
	}
	squashed, err := u.repo.CommitTree(ctx, info, src+"^{tree}", base, true)
	if err != nil {
		return "", false, err
	}
	u.notify("%s commits of %s staged as one, %s", count, source, replay.Short(squashed))
	return squashed, false, nil
}

// tracked reports whether a remote-tracking ref contains commit.
func (u *run) tracked(ctx context.Context, commit string) bool {
	out, err := u.repo.Output(ctx, "for-each-ref", "--count=1", "--contains", commit, "refs/remotes/")
	return err != nil || out != "" // when git cannot tell, do not take the short cut
}

// isShallowBoundary reports whether commit is one of the repository's shallow
// boundary commits (its parents are not here).
func (u *run) isShallowBoundary(ctx context.Context, commit string) bool {
	path, err := u.repo.Output(ctx, "rev-parse", "--path-format=absolute", "--git-path", "shallow")
	if err != nil {
		return false
	}
	b, err := os.ReadFile(path)
	return err == nil && slices.Contains(strings.Fields(string(b)), commit)
}

// stage pushes commit to a staged ref of its own, retried as any push is.
func (u *run) stage(ctx context.Context, commit string) error {
	id, err := newID()
	if err != nil {
		return err
	}
	ref := u.n.staged(id)
	var out, errOut bytes.Buffer
	p := &push.Runner{
		Git: u.git(), Dirs: u.Dirs, Env: u.Env,
		Settings: func() (transaction.Settings, error) { return transaction.Settings{Policy: u.policy}, nil },
		OnAttempt: func(a retry.Attempt) {
			u.res.Pushes++
			if u.OnAttempt != nil {
				u.OnAttempt(a)
			}
		},
		Note: u.Note,
	}
	args := append(append(append([]string(nil), u.PushOptions...), "--porcelain", u.Remote), commit+":"+ref)
	res, err := p.Run(ctx, args, &out, &errOut)
	if res.ExitCode != 0 {
		u.stderr().Write(errOut.Bytes())
		var pe *failure.Error
		if errors.As(err, &pe) && (pe.Class == failure.Declined || pe.Class == failure.Rejected) {
			return fmt.Errorf("the remote refused the staged ref %s (%s): it does not accept refs outside "+
				"refs/heads and refs/tags, or a rule forbids them; push with --rebase or --regenerate instead: %w", ref, pe.Message, err)
		}
		return err
	}
	u.res.ID, u.res.Staged = id, commit
	u.notify("staged %s as %s", replay.Short(commit), ref)
	return nil
}

// wait watches the remote until the staged commit is gathered, gathering when
// elected.
func (u *run) wait(ctx context.Context) error {
	id, mine := u.res.ID, u.res.Staged
	var (
		leaseSeen  string    // the lease value last seen
		leaseSince time.Time // since when it has been seen unchanged (or free)
		interval   = pollMin
	)
	for {
		st, err := u.look(ctx)
		if err == nil {
			if _, ok := st.staged[id]; !ok {
				return u.outcome(ctx, st)
			}
			if st.lease != leaseSeen || leaseSince.IsZero() {
				leaseSeen, leaseSince = st.lease, time.Now()
			}
			switch {
			case st.lease == mine:
				// Ours: taken in an attempt whose answer was lost, or not yet used.
				if err := u.gather(ctx, st, mine); err != nil {
					return err
				}
				continue
			case st.lease == "" && (st.order()[0] == id || time.Since(leaseSince) > freeGrace):
				if u.takeLease(ctx, "", mine) {
					continue // gather on the next look, with the lease ours
				}
			case st.lease != "" && time.Since(leaseSince) > u.leaseTimeout():
				u.notify("the gather lease %s has not changed for %v: taking it over", replay.Short(st.lease), u.leaseTimeout())
				if u.takeLease(ctx, st.lease, mine) {
					continue
				}
			}
			interval = nextInterval(interval, len(st.staged))
		}
		reason := ""
		if u.left() <= 0 {
			reason = "the budget ended"
			if err != nil {
				reason += "; last look at the remote: " + err.Error()
			}
		} else if err := sleep(ctx, min(jitter(interval), u.left())); err != nil {
			reason = err.Error()
		}
		if reason != "" {
			ctx := context.WithoutCancel(ctx)
			if leaseSeen == mine { // a lease taken and not used: let the next gatherer have it
				u.takeLease(ctx, mine, "")
			}
			// A last look: a gather may have taken the commit since.
			if st, err := u.look(ctx); err == nil {
				if _, ok := st.staged[id]; !ok {
					return u.outcome(ctx, st)
				}
			}
			return &NotLandedError{Ref: u.n.staged(id), Commit: mine, Elapsed: time.Since(u.start), Reason: reason}
		}
	}
}

// outcome is what became of the job's staged commit, gone from the staged refs.
func (u *run) outcome(ctx context.Context, st state) error {
	id := u.res.ID
	if c, ok := st.conflict[id]; ok {
		return u.conflicted(ctx, c)
	}
	if c, ok := st.discarded[id]; ok {
		u.pushRefs(ctx, []string{"--force-with-lease=" + u.n.discarded(id) + ":" + c, ":" + u.n.discarded(id)})
		return &DiscardedError{Ref: u.n.staged(id), Commit: c}
	}
	u.res.Landed = true
	if u.res.Gathered == 0 {
		u.notify("%s landed on %s, gathered by another job", replay.Short(u.res.Staged), u.n.branch)
	}
	return nil
}

// conflicted reports the job's own conflict: it replays its commit onto the branch
// to name the paths, and removes the conflict ref (the commit stays in the job's
// repository).
func (u *run) conflicted(ctx context.Context, commit string) error {
	e := &ConflictError{Commit: commit, Ref: u.n.conflict(u.res.ID)}
	if tips, err := u.fetch(ctx, []string{u.n.head()}, 2); err == nil {
		e.Onto = tips[0]
		var ce *replay.ConflictError
		if _, err := u.repo.Pick(ctx, commit, commit+"^", e.Onto, replay.Keep{}); errors.As(err, &ce) {
			e.Paths = ce.Paths
		}
	}
	u.pushRefs(ctx, []string{"--force-with-lease=" + e.Ref + ":" + commit, ":" + e.Ref})
	return e
}

// look reads the remote's refs of the branch.
func (u *run) look(ctx context.Context) (state, error) {
	c, err := gitexec.Capture(u.repo.Command(ctx, u.http.Attempt(u.env, u.left()),
		append([]string{"ls-remote", u.Remote}, u.n.patterns()...)...))
	if err != nil {
		return state{}, err
	}
	if c.Code != 0 {
		return state{}, fmt.Errorf("git ls-remote exited %d: %s", c.Code, lastLine(c.Stderr))
	}
	return parseState(u.n, string(c.Stdout)), nil
}

// takeLease compare-and-swaps the lease from old ("" for free) to value ("" to let it
// go), and reports whether the push succeeded.
func (u *run) takeLease(ctx context.Context, old, value string) bool {
	ok, _ := u.pushRefs(ctx, []string{"--force-with-lease=" + u.n.lease() + ":" + old, value + ":" + u.n.lease()})
	return ok
}

// fetch fetches refs of the remote into refretry's own local namespace (depth: that
// many commits of each, 0 for all the history the negotiation brings) and returns
// their values, in order.
func (u *run) fetch(ctx context.Context, refs []string, depth int) ([]string, error) {
	args := []string{"fetch", "-q", "--no-tags", "--no-write-fetch-head"}
	if depth > 0 {
		args = append(args, fmt.Sprintf("--depth=%d", depth))
	}
	args = append(args, u.Remote)
	locals := make([]string, len(refs))
	for i, ref := range refs {
		locals[i] = "refs/refretry/fetched/" + strings.TrimPrefix(ref, "refs/")
		args = append(args, "+"+ref+":"+locals[i])
	}
	c, err := gitexec.Capture(u.repo.Command(ctx, u.http.Attempt(u.env, u.left()), args...))
	if err != nil {
		return nil, err
	}
	if c.Code != 0 {
		return nil, fmt.Errorf("git fetch exited %d: %s", c.Code, lastLine(c.Stderr))
	}
	values := make([]string, len(refs))
	for i, l := range locals {
		if values[i] = u.repo.RevParse(ctx, l); values[i] == "" {
			return nil, fmt.Errorf("fetching %s: nothing arrived", refs[i])
		}
	}
	return values, nil
}

// pushRefs runs one atomic git push of refspecs, each with its lease, and reports
// whether it succeeded and how it failed.
func (u *run) pushRefs(ctx context.Context, refspecs []string) (bool, *failure.Error) {
	args := append(append([]string{"push"}, u.PushOptions...), "--atomic", "--porcelain", u.Remote)
	c, err := gitexec.Capture(u.repo.Command(ctx, u.http.Attempt(u.env, u.left()), append(args, refspecs...)...))
	u.res.Pushes++
	u.lastPush = c
	if err != nil {
		return false, &failure.Error{Command: "push", ExitCode: 128, Class: failure.Other, Message: err.Error()}
	}
	if e := push.Classify(c.Code, c.Stdout, c.Stderr); e != nil {
		return false, e
	}
	return true, nil
}

// nextInterval is the wait before the next look at the remote.
func nextInterval(cur time.Duration, staged int) time.Duration {
	ceiling := max(pollMax, time.Duration(staged)*time.Second/pollPerSecond)
	return min(cur*3/2, ceiling, pollCap)
}

func jitter(d time.Duration) time.Duration { return retry.Jitter(d, 0.5, rand.Float64()) }

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
