package gather

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/httpconf"
	"github.com/refretry/refretry/internal/realtime"
	"github.com/refretry/refretry/internal/replay"
	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// Defaults of the Runner's limits.
const (
	DefaultMaxPerWave   = 64
	DefaultLeaseTimeout = 30 * time.Second
	// A waiter's looks at the remote (nextLook): the first one a quarter of the time its
	// staging push took after it (the server's pace), between pollMin and
	// pollFirstMax; then about the time a gather takes to reach its commit, waveCost
	// and commitCost for each commit ahead of it, never more than lookRate looks a
	// second from all waiters together, and at most pollCap apart (busyCap when the
	// looks themselves are slow: one look in flight at a time); pollErr after a look
	// that failed.
	pollMin      = 100 * time.Millisecond
	pollFirstMax = 500 * time.Millisecond
	waveCost     = 300 * time.Millisecond
	commitCost   = 20 * time.Millisecond
	lookRate     = 48
	pollCap      = 5 * time.Second
	busyCap      = 15 * time.Second
	pollErr      = time.Second
)

// Runner lands one job's commit on a branch of a remote through a gather (see the
// package comment). Its fields are its configuration, which its methods only read: one
// Runner may serve any number of calls, one after another or at once. What a call
// pushes where, and its streams, are its arguments.
type Runner struct {
	Git  string   // git executable ("" means "git")
	Dirs []string // -C directories, in order
	Env  []string // the caller's whole environment

	// MaxPerWave bounds the staged commits one gather takes, and so the refs one push
	// updates (forges cap them); 0 means DefaultMaxPerWave.
	MaxPerWave int
	// LeaseTimeout is how long a lease may stay unchanged before a waiter takes it
	// over; 0 means DefaultLeaseTimeout.
	LeaseTimeout time.Duration
	// Key, when set (at least MinKeyLen bytes), binds the gatherer to the jobs it
	// serves: the jobs of one pipeline share it (a CI secret). A staged ref's name
	// carries an authenticator of the branch, its id and its commit made with Key,
	// and a gatherer lands only the staged commits whose authenticator verifies and
	// whose id's time is within MaxAge. Without a key, a gatherer lands whatever is
	// staged: it trusts everyone who may push refs/refretry/* to the remote.
	Key []byte
	// MaxAge is how old a staged commit may be and still land, with a Key; 0 means
	// DefaultMaxAge.
	MaxAge time.Duration
	// Accept are staged ids a gather lands although they do not verify: a human's
	// decision, for `refretry gather land`.
	Accept []string
	// Settings supplies the budget (its policy's Timeout bounds the whole run; the
	// staging push is retried on its schedule). nil means retry.DefaultPolicy.
	Settings func() (settings.Settings, error)

	// Note, if set, is told what happened (staged, gathered, landed, a lease taken
	// over, a staged commit that is old), as a kind ("gather") and a line.
	Note func(kind, msg string)
	// OnAttempt, if set, is called after every push the run makes: each attempt of
	// the staging push, and each push that takes or lets go a lease, lands a wave or
	// removes a conflict or discarded ref (one attempt each, Final; Number counts the
	// run's pushes). A failed one's Err is a *failure.Error.
	OnAttempt func(retry.Attempt)
	// Clock and Rand time and randomise every wait of a run (its looks at the remote,
	// a lease's age, the budget) and the staging push's retries; nil means real time
	// and randomness. A staged id carries the real time it was made at, which the
	// age rules (MaxAge, a note on an old one) compare with Clock's.
	Clock retry.Clock
	Rand  func() float64
}

// Result is what a Run did.
type Result struct {
	// ExitCode is Run's exit code to exit with: 0 when the commit is on the branch,
	// git's own when a push failed for good (the staging push, a wave the remote
	// refused), 127 when git could not be started, 129 for arguments Run cannot take,
	// else 1 (a conflict, a budget that ended, …).
	ExitCode int
	// Ref is the branch Run's arguments name, refs/heads/<branch> ("" when it could
	// not read them).
	Ref      string
	ID       string // the staged id ("" when nothing was staged)
	Staged   string // the staged commit
	Landed   bool   // the commit is on the branch
	Gathered int    // commits this job's own gathers landed, its own included
	Waves    int    // gathers this job ran that landed something
	Pushes   int    // pushes this job made (staging, leases, gathers)
	// Refused are the staged ids its gathers saw and did not land because they did
	// not verify against the Key (they stay staged), in the order it saw them.
	Refused []string
}

// ConflictError is a job whose staged commit does not replay onto the branch: a
// gatherer moved it to the conflict namespace (Ref), and this job's replay found
// these paths in conflict.
type ConflictError struct {
	Commit string
	Ref    string
	Paths  []string
	Onto   string
	// Push is the arguments of a git push that lands the job's source on the branch
	// without a gather (Run's options, <remote> <src>:refs/heads/<branch>): what a
	// caller that falls back to push.Runner's Rebase or Regenerate runs.
	Push []string
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

// MovedError is a job whose staged ref someone else moved to another commit (Now):
// the job's commit did not land through it, and a gather with a Key never lands what
// the ref holds now.
type MovedError struct{ Ref, Commit, Now string }

func (e *MovedError) Error() string {
	return fmt.Sprintf("%s was moved from this job's %s to %s by someone else: %s did not land, and the ref stays for a human to look at",
		e.Ref, replay.Short(e.Commit), replay.Short(e.Now), replay.Short(e.Commit))
}

// DiscardedError is a staged commit that `refretry gather discard` removed.
type DiscardedError struct{ Ref, Commit string }

func (e *DiscardedError) Error() string {
	return fmt.Sprintf("%s (%s) was discarded (refretry gather discard) before it landed", e.Ref, replay.Short(e.Commit))
}

// run is one Run's state.
type run struct {
	*Runner
	t         target
	n         names
	repo      replay.Repo
	http      httpconf.Settings
	env       []string
	policy    retry.Policy
	clock     retry.Clock    // the Runner's, or the real one
	random    func() float64 // the Runner's, or the process-wide source
	start     time.Time
	res       Result
	lastPush  gitexec.Captured
	errOut    io.Writer       // the run's stderr (nil: discarded)
	perWave   int             // staged commits a gather takes (halved when a remote refuses as many)
	shallow   bool            // the repository is a shallow clone
	boundary  []string        // its shallow boundary commits
	untrusted map[string]bool // staged ids that did not verify, each named once
	err       error
}

// Run lands the commit of one git push through a gather: it stages the commit and
// waits until it is on the branch, gathering when elected. args are the arguments of
// that git push, as `refretry push --gather` takes them: git push's options, given to
// every push the run makes (-o ci.skip, say), then <remote> and one
// [<src>:]<branch> (<src> is HEAD when not given). Run reads them before anything
// else, and arguments it cannot take are an *ArgsError, with nothing run and none of
// the Runner's functions called. stdin is not read and nothing is written to stdout
// (nil will do for both): a gather's pushes are of refretry's own refs, and none is
// the caller's push; they are there so that the Runners run alike. git's output
// reaches stderr (nil discards it) only when a push fails for good. It returns a
// *ConflictError, *NotLandedError, *DiscardedError or *MovedError when the commit did
// not land, a *failure.Error (or a retry error wrapping one) when it could not be
// staged or a gather's push was refused for good, one of class failure.Signing when
// a commit it had to sign could not be (sign.go), and other errors for what went
// wrong on the way; Result.ExitCode says how to exit.
func (r *Runner) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	t, err := readArgs(args)
	if err != nil {
		return Result{ExitCode: exitCode(err)}, err
	}
	res, err := r.run(ctx, t, stderr)
	res.Ref, res.ExitCode = "refs/heads/"+t.branch, exitCode(err)
	return res, err
}

// run is Run once its arguments are read.
func (r *Runner) run(ctx context.Context, t target, stderr io.Writer) (Result, error) {
	u := r.newRun(ctx, t, stderr)
	if u.err != nil {
		return u.res, u.err
	}
	defer u.cleanup()
	if err := u.readSigning(ctx); err != nil {
		return u.res, err
	}
	commit, done, err := u.prepare(ctx)
	if err != nil || done {
		u.res.Landed = done
		return u.res, err
	}
	if err := u.checkSigning(ctx, commit); err != nil {
		return u.res, err
	}
	began := u.clock.Now()
	if err := u.stage(ctx, commit); err != nil {
		return u.res, err
	}
	staging := u.since(began)
	return u.res, u.wait(ctx, staging)
}

// exitCode is the exit code of a run that ended with err (Result.ExitCode).
func exitCode(err error) int {
	var f *failure.Error
	var a *ArgsError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &a):
		return 129 // git's, for a usage mistake
	case errors.Is(err, failure.ErrGitNotFound):
		return 127 // a shell's "command not found"
	case errors.As(err, &f) && f.ExitCode != 0:
		return f.ExitCode
	}
	return 1
}

// newRun is a run's state for r and t, writing to stderr; its err says why it cannot
// run (the policy, an old git).
func (r *Runner) newRun(ctx context.Context, t target, stderr io.Writer) *run {
	u := &run{Runner: r, t: t, n: newNames(t.branch), clock: r.Clock, random: r.Rand, perWave: r.maxPerWave(), errOut: stderr, untrusted: map[string]bool{}}
	if u.clock == nil {
		u.clock = realtime.Clock{}
	}
	if u.random == nil {
		u.random = realtime.Float64
	}
	u.start = u.clock.Now()
	if r.Key != nil && len(r.Key) < MinKeyLen {
		u.err = &KeyError{Len: len(r.Key)}
		return u
	}
	u.repo = replay.Repo{Git: r.git(), Dirs: r.Dirs, Env: r.Env}
	u.http = httpconf.Look(ctx, r.git(), r.Dirs, r.Env, t.remote, httpconf.Floor{})
	u.env = u.http.Env(r.Env)
	if u.policy, u.err = r.policyOrDefault(); u.err != nil {
		return u
	}
	if !u.repo.AtLeast(ctx, 2, 40) {
		u.err = fmt.Errorf("gather needs git 2.40 or later (merge-tree --merge-base); %s is %s",
			r.git(), gitexec.Version(ctx, r.git(), r.Env))
		return u
	}
	u.shallow, u.boundary = u.shallowness(ctx)
	return u
}

// shallowness reports whether the repository is shallow, and its boundary commits
// (whose parents are not here), with one git.
func (u *run) shallowness(ctx context.Context) (bool, []string) {
	out, err := u.repo.Output(ctx, "rev-parse", "--is-shallow-repository", "--path-format=absolute", "--git-path", "shallow")
	shallow, path, _ := strings.Cut(out, "\n")
	if err != nil || shallow != "true" {
		return false, nil
	}
	b, _ := os.ReadFile(path)
	return true, strings.Fields(string(b))
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

func (r *Runner) git() string { return gitexec.Path(r.Git) }

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

func (r *Runner) maxAge() time.Duration {
	if r.MaxAge > 0 {
		return r.MaxAge
	}
	return DefaultMaxAge
}

func (r *Runner) leaseTimeout() time.Duration {
	if r.LeaseTimeout > 0 {
		return r.LeaseTimeout
	}
	return DefaultLeaseTimeout
}

func (u *run) stderr() io.Writer {
	if u.errOut != nil {
		return u.errOut
	}
	return io.Discard
}

// left is what the budget has left.
func (u *run) left() time.Duration {
	if u.policy.Timeout <= 0 {
		return time.Hour
	}
	return u.policy.Timeout - u.since(u.start)
}

// since is the time since t, on the run's clock.
func (u *run) since(t time.Time) time.Duration { return u.clock.Now().Sub(t) }

// jitter spreads d over ±50 %, with the run's random source.
func (u *run) jitter(d time.Duration) time.Duration { return retry.Jitter(d, 0.5, u.random()) }

// prepare works out the one commit to stage: the source itself when it is one commit
// on the remote tip it started from, else its changes squashed into one. done is true
// when the branch already has the source.
func (u *run) prepare(ctx context.Context) (commit string, done bool, err error) {
	source := u.t.source
	src, parents := u.parents(ctx, source)
	if src == "" {
		return "", false, fmt.Errorf("%s is not a commit", source)
	}
	// A depth-1 checkout's one commit sits on the shallow boundary: its parent is the
	// remote tip it started from, with no need to ask the remote.
	// (Unless the remote is known to have the commit itself: a remote-tracking ref
	// contains it.)
	if len(parents) == 1 && slices.Contains(u.boundary, parents[0]) && !u.tracked(ctx, src) {
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
		if len(parents) == 1 && parents[0] == base {
			return src, false, nil
		}
	}
	// Several commits: one commit with the last one's tree, author and message.
	info, err := u.repo.ReadCommit(ctx, src)
	if err != nil {
		return "", false, err
	}
	squashed, err := u.repo.CommitTree(ctx, info, src+"^{tree}", base, true)
	if se := (*replay.SignError)(nil); errors.As(err, &se) {
		return "", false, se.Failure("nothing was staged")
	} else if err != nil {
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

// parents are the commit rev names and its parents, from one git ("" when rev names
// no commit).
func (u *run) parents(ctx context.Context, rev string) (string, []string) {
	out, err := u.repo.Output(ctx, "rev-list", "--parents", "-n1", rev+"^{commit}", "--")
	f := strings.Fields(out)
	if err != nil || len(f) == 0 {
		return "", nil
	}
	return f[0], f[1:]
}

// stage pushes commit to a staged ref of its own, retried as any push is.
func (u *run) stage(ctx context.Context, commit string) error {
	id, err := newID()
	if err != nil {
		return err
	}
	id = signedID(u.Key, u.n.branch, id, commit)
	ref := u.n.staged(id)
	var out, errOut bytes.Buffer
	p := &push.Runner{
		Git: u.git(), Dirs: u.Dirs, Env: u.Env,
		Settings: func() (settings.Settings, error) { return settings.Settings{Policy: u.policy}, nil },
		OnAttempt: func(a retry.Attempt) {
			u.res.Pushes++
			if u.OnAttempt != nil {
				u.OnAttempt(a)
			}
		},
		Note: u.Note, Clock: u.clock, Rand: u.random,
	}
	args := append(append(append([]string(nil), u.t.options...), "--porcelain", u.t.remote), commit+":"+ref)
	res, err := p.Run(ctx, args, nil, &out, &errOut)
	if res.ExitCode != 0 {
		u.stderr().Write(errOut.Bytes())
		var pe *failure.Error
		if errors.As(err, &pe) && pe.Class == failure.Declined && push.SignatureRule(pe.Policy) {
			return fmt.Errorf("the remote refused the staged commit %s for its signature (%s): %w", replay.Short(commit), pe.Message, err)
		}
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
// elected: when the lease is free (the first to take it gathers; a failed take costs
// the others one look, as git refuses it before sending anything), or when the lease
// has not changed for the job's patience: LeaseTimeout at first, doubled after each
// take-over it makes. A take-over ends the holder's wave, so two live jobs whose
// waves take longer than LeaseTimeout would otherwise take the lease from each other
// for ever; the doubling lets the patience outgrow the wave.
// Every look is a request to the server that every waiting job makes, so a waiter
// looks when its commit may have landed (see nextLook), not at a fixed pace.
func (u *run) wait(ctx context.Context, staging time.Duration) error {
	id, mine := u.res.ID, u.res.Staged
	var (
		leaseSeen  string    // the lease value last seen
		moved      string    // another commit the last look saw at the job's staged ref
		leaseSince time.Time // since when it has been seen unchanged (or free)
		patience   = u.leaseTimeout()
		lastErr    error
		delay      = min(max(staging/4, pollMin), pollFirstMax)
	)
	for {
		if reason := u.pause(ctx, delay, lastErr); reason != "" {
			return u.notLanded(ctx, reason)
		}
		lookStart := u.clock.Now()
		st, err := u.look(ctx)
		took := u.since(lookStart)
		if lastErr = err; err != nil {
			delay = pollErr
			continue
		}
		if c, ok := st.staged[id]; !ok {
			return u.outcome(ctx, st)
		} else if c != mine {
			// Moved by someone else, once two looks in a row agree (a look taken while
			// the remote updates its refs has shown a null id).
			if c == moved && !nullID(c) {
				return &MovedError{Ref: u.n.staged(id), Commit: mine, Now: c}
			}
			moved, delay = c, pollMin
			continue
		}
		moved = ""
		if st.lease != leaseSeen || leaseSince.IsZero() {
			leaseSeen, leaseSince = st.lease, u.clock.Now()
		}
		held := ""
		switch {
		case st.lease == mine: // ours: taken in an attempt whose answer was lost
			held = mine
		case st.lease == "":
			if u.takeLease(ctx, "", mine) {
				held = mine
			}
		case st.lease != "" && u.since(leaseSince) > patience:
			u.notify("the gather lease %s has not changed for %v: taking it over", replay.Short(st.lease), patience)
			patience *= 2
			if u.takeLease(ctx, st.lease, mine) {
				held = mine
			}
		}
		if held != "" {
			if st, err = u.gatherAll(ctx, st, held); err != nil {
				return err
			}
			if _, ok := st.staged[id]; !ok {
				return u.outcome(ctx, st)
			}
			// What was seen before this job held the lease says nothing about the
			// lease now: a value seen again (another job's commit, taken back) starts
			// a new wait.
			leaseSeen, leaseSince, delay = "", time.Time{}, 0
			continue
		}
		delay = u.jitter(nextLook(st, id, took))
	}
}

// pause waits d, and says why the run must end instead: the budget ended, or ctx's.
func (u *run) pause(ctx context.Context, d time.Duration, lastErr error) string {
	if d > 0 && u.left() > 0 {
		if err := u.clock.Sleep(ctx, min(d, u.left())); err != nil {
			return err.Error()
		}
	}
	if u.left() > 0 {
		return ""
	}
	reason := "the budget ended"
	if lastErr != nil {
		reason += "; last look at the remote: " + lastErr.Error()
	}
	return reason
}

// notLanded ends a run whose commit has not landed, after one last look: a gather
// may have taken the commit since. A lease taken and not used is let go.
func (u *run) notLanded(ctx context.Context, reason string) error {
	ctx = context.WithoutCancel(ctx)
	id, mine := u.res.ID, u.res.Staged
	st, err := u.look(ctx)
	if err == nil {
		if st.lease == mine {
			u.takeLease(ctx, mine, "")
		}
		if _, ok := st.staged[id]; !ok {
			return u.outcome(ctx, st)
		}
	}
	return &NotLandedError{Ref: u.n.staged(id), Commit: mine, Elapsed: u.since(u.start), Reason: reason}
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
	e := &ConflictError{Commit: commit, Ref: u.n.conflict(u.res.ID), Push: u.t.plainPush()}
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
		append([]string{"ls-remote", u.t.remote}, u.n.patterns()...)...))
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
	args = append(args, u.t.remote)
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
// whether it succeeded and how it failed. The push is an attempt of its own for
// OnAttempt: numbered with the run's pushes, and final (whatever follows is another
// push, decided by the next look).
func (u *run) pushRefs(ctx context.Context, refspecs []string) (bool, *failure.Error) {
	args := append(append([]string{"push"}, u.t.options...), "--atomic", "--porcelain", u.t.remote)
	begin := u.clock.Now()
	c, err := gitexec.Capture(u.repo.Command(ctx, u.http.Attempt(u.env, u.left()), append(args, refspecs...)...))
	u.res.Pushes++
	u.lastPush = c
	var perr *failure.Error
	if err != nil {
		perr = &failure.Error{Command: "push", ExitCode: 128, Class: failure.Other, Message: err.Error()}
	} else {
		perr = push.Classify(c.Code, c.Stdout, c.Stderr)
	}
	if u.OnAttempt != nil {
		a := retry.Attempt{Number: u.res.Pushes, Start: begin, Duration: u.since(begin), Final: true}
		if perr != nil {
			a.Err = perr
		}
		u.OnAttempt(a)
	}
	return perr == nil, perr
}

// nextLook is how long a waiter lets pass before its next look at the remote, st
// being what it saw and took how long that look took, before jitter (the caller
// spreads it over ±50 %, so that looks spread out): about the time a gather takes to
// reach its commit (each wave takes the oldest first), and never so soon that all
// waiting jobs together look more than lookRate times a second. A look costs the
// remote about what it took, and on a remote that slows under load (a small server,
// or one that shares its cores with the jobs) the looks would take the gatherer's
// time: so the waiters together also keep at most about one look in flight, each
// waiting len(st.staged) times its last look, up to busyCap.
func nextLook(st state, id string, took time.Duration) time.Duration {
	ahead := slices.Index(st.order(), id) + 1
	d := max(waveCost+time.Duration(ahead)*commitCost, time.Duration(len(st.staged))*time.Second/lookRate)
	d = min(max(d, pollMin), pollCap)
	return max(d, min(time.Duration(len(st.staged))*took, busyCap))
}

// nullID reports whether oid is git's null object id (all zeros), never a commit.
func nullID(oid string) bool { return strings.Trim(oid, "0") == "" }

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
