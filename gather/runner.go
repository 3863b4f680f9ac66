package gather

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/forge"
	"github.com/refretry/refretry/internal/apicommit"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/httpconf"
	"github.com/refretry/refretry/internal/replay"
	"github.com/refretry/refretry/internal/repo"
	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// Defaults of the Runner's limits.
const (
	DefaultMaxPerWave   = 64
	DefaultLeaseTimeout = 30 * time.Second
)

// Runner lands one job's commit on a branch of a remote through a gather (see the
// package comment). Its fields are its configuration, which its methods only read: one
// Runner may serve any number of calls, one after another or at once. What a call
// pushes where, and its streams, are its arguments.
//
// Its Config's Settings supplies the budget and the staging push's retry schedule,
// and is asked at the start of a run. The budget is its policy's Timeout, counted as
// time in which the remote did not move (no wave landed, the branch stood still) up
// to its Ceiling when the settings are Progressive, else a plain deadline. Note is
// told what happened (staged, gathered, landed, a lease taken over, a staged commit
// that is old), as a kind ("gather") and a line. OnAttempt is called after every push
// the run makes: each attempt of the staging push, and each push that takes or lets
// go a lease, lands a wave or removes a conflict or discarded ref (one attempt each,
// Final; Number counts the run's pushes). Clock and Rand time and randomise every
// wait of a run (its looks at the remote, a lease's age, the budget) and the staging
// push's retries; a staged id carries the real time it was made at, which the age
// rules (MaxAge, a note on an old one) compare with Clock's.
type Runner struct {
	settings.Config

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
	// NoWait makes Run stage the commit and return, without waiting for a gather or
	// gathering: the matrix jobs of a fan-in, whose commits a later job lands with
	// Land (`refretry gather land`). Result.Landed is then false, and ExitCode 0 once
	// the commit is staged.
	NoWait bool

	// API, when set, has a gatherer land each wave through the forge's API (package
	// forge's API says which forge, where and with what token) instead of pushing
	// the branch: one commit a wave, made by the forge (api.go says how a wave's
	// commit is recorded on the remote first, so that nothing lands twice). The
	// staging pushes, the lease and the looks are as always.
	API *forge.API
}

// Result is what a Run did.
type Result struct {
	// ExitCode is Run's exit code to exit with: 0 when the commit is on the branch,
	// git's own when a push failed for good (the staging push, a wave the remote
	// refused), failure.ExitGitNotFound when git could not be started, 129 for
	// arguments Run cannot take, else 1 (a conflict, a budget that ended, …).
	ExitCode int
	// Ref is the branch Run's arguments name, refs/heads/<branch> ("" when it could
	// not read them).
	Ref    string
	ID     string // the staged id ("" when nothing was staged)
	Staged string // the staged commit
	// StagedRef is the remote ref the commit was staged as,
	// refs/refretry/gather/<branch>/<id> ("" when nothing was staged): what a --no-wait
	// job updated.
	StagedRef string
	Landed    bool // the commit is on the branch
	Gathered  int  // commits this job's own gathers landed, its own included
	Waves     int  // gathers this job ran that landed something
	Pushes    int  // pushes this job made (staging, leases, gathers)
	Landings  int  // through an API: the wave commits this job asked the forge to make
	// Refused are the staged ids its gathers saw and did not land because they did
	// not verify against the Key (they stay staged), in the order it saw them.
	Refused []string
	// Conflicts are the staged ids its gathers moved to the conflict namespace, for
	// their jobs: their commits did not replay onto the branch.
	Conflicts []string
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

// LeftError is a Land that moved staged commits to the conflict namespace, since they
// did not replay onto the branch: in a fan-in their jobs have ended, so their results
// have not landed, and Land fails saying which.
type LeftError struct {
	Branch string
	Refs   []string // the conflict refs
}

func (e *LeftError) Error() string {
	return fmt.Sprintf("%d staged commits conflict with %s and did not land; each is kept at its conflict ref for its job or a human "+
		"(land it with push --rebase or --regenerate, then refretry gather discard its id): %s",
		len(e.Refs), e.Branch, strings.Join(e.Refs, ", "))
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
	t           target
	n           names
	repo        replay.Repo
	http        httpconf.Settings
	env         []string
	policy      retry.Policy
	progressive bool           // the budget counts time without progress (settings.Settings.Progressive)
	ceiling     time.Duration  // then: the hard limit from start
	clock       retry.Clock    // the Runner's, or the real one
	random      func() float64 // the Runner's, or the process-wide source
	start       time.Time
	moved       time.Time // when the budget last started: at start, and at each progress
	res         Result
	lastPush    gitexec.Captured
	pushTook    time.Duration       // how long the last push took: the staging push, then each wave's
	lastWave    time.Duration       // how long the last wave took, from its look to its push's end
	lookTook    time.Duration       // how long the last look took
	landing     bool                // the run is Land's
	fetched     bool                // it fetched into refs/refretry/fetched/ (cleanup)
	errOut      io.Writer           // the run's stderr (nil: discarded)
	perWave     int                 // staged commits a gather takes (halved when a remote refuses as many)
	shallow     bool                // the repository is a shallow clone
	boundary    []string            // its shallow boundary commits
	untrusted   map[string]bool     // staged ids that did not verify, each named once
	ep          *apicommit.Endpoint // the forge's API, when waves land through it (api.go)
	inflight    string              // through an API: a wave commit that may have landed (api.go)
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
	u, err := r.newRun(ctx, t, stderr)
	if err == nil {
		err = u.replaying(ctx)
	}
	if err != nil {
		return u.res, err
	}
	defer u.cleanup()
	commit, info, done, err := u.prepare(ctx)
	if err != nil || done {
		u.res.Landed = done
		return u.res, err
	}
	if err := u.checkSigning(ctx, commit, info); err != nil {
		return u.res, err
	}
	if err := u.checkAPI(ctx, commit); err != nil {
		return u.res, err
	}
	began := u.clock.Now()
	held, err := u.stage(ctx, commit)
	u.pushTook = u.since(began)
	if err != nil || u.NoWait {
		if err == nil {
			u.notify("%s stays staged until a gather lands it: `refretry gather land %s %s` (a fan-in job), or another job's",
				u.res.ID, u.t.remote, u.n.branch)
		}
		return u.res, err
	}
	u.progress() // the staging push moved the remote: the wait's budget starts now
	return u.res, u.wait(ctx, u.pushTook, held)
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
	case errors.As(err, &f) && f.ExitCode != 0:
		return f.ExitCode
	}
	return failure.ExitCode(1, err)
}

// newRun is a run's state for r and t, writing to stderr, with what every command
// needs: its names, clock, budget and HTTP settings (one git config, asked once a
// process). The error says why it cannot run (a key too short, settings that do not
// work); git is not asked about the repository here (replaying does that).
func (r *Runner) newRun(ctx context.Context, t target, stderr io.Writer) (*run, error) {
	u := &run{Runner: r, t: t, n: newNames(t.branch), perWave: r.maxPerWave(), errOut: stderr, untrusted: map[string]bool{}}
	u.clock, u.random = r.Clocks()
	u.start = u.clock.Now()
	u.moved = u.start
	u.repo = replay.Repo{Git: r.GitPath(), Dirs: r.Dirs, Env: r.Env}
	if r.Key != nil && len(r.Key) < MinKeyLen {
		return u, &KeyError{Len: len(r.Key)}
	}
	s, err := r.Load()
	if err != nil {
		return u, err
	}
	u.policy, u.progressive, u.ceiling = s.Policy, s.Progressive(), s.Ceiling
	u.http = httpconf.Look(ctx, r.GitPath(), r.Dirs, r.Env, t.remote, httpconf.Floor{})
	u.env = u.http.Env(r.Env)
	return u, nil
}

// replaying sets up what a run that replays commits (Run, Land) needs of the
// repository: a git that can replay, whether the clone is shallow, the forge's API
// when the Runner lands through one, and whether the commits it writes are signed.
func (u *run) replaying(ctx context.Context) error {
	if !u.repo.AtLeast(ctx, 2, 40) {
		return fmt.Errorf("gather needs git 2.40 or later (merge-tree --merge-base); %s is %s",
			u.GitPath(), gitexec.Version(ctx, u.GitPath(), u.Env))
	}
	u.shallow, u.boundary = u.shallowness(ctx)
	if u.API != nil {
		if err := u.apiSetup(ctx); err != nil {
			return err
		}
	}
	return u.readSigning(ctx)
}

// shallowness reports whether the repository is shallow, and its boundary commits
// (whose parents are not here): its shallow file, found without git where internal/repo
// is sure of the repository, else with one git.
func (u *run) shallowness(ctx context.Context) (bool, []string) {
	path := ""
	if d, ok := repo.Discover(u.Dirs, u.Env); ok && gitexec.Getenv(u.Env, "GIT_SHALLOW_FILE") == "" {
		path = filepath.Join(d.CommonDir, "shallow")
	} else {
		out, err := u.repo.Output(ctx, "rev-parse", "--is-shallow-repository", "--path-format=absolute", "--git-path", "shallow")
		shallow, p, _ := strings.Cut(out, "\n")
		if err != nil || shallow != "true" {
			return false, nil
		}
		path = p
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return false, nil
	}
	return true, strings.Fields(string(b))
}

// cleanup removes the local refs the run fetched into (refs/refretry/fetched/).
func (u *run) cleanup() {
	if !u.fetched {
		return
	}
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

// since is the time since t, on the run's clock.
func (u *run) since(t time.Time) time.Duration { return u.clock.Now().Sub(t) }

// jitter spreads d over ±50 %, with the run's random source.
func (u *run) jitter(d time.Duration) time.Duration { return retry.Jitter(d, 0.5, u.random()) }

// prepare works out the one commit to stage: the source itself when it is one commit
// on the remote tip it started from, else its changes squashed into one. info is the
// source commit as read. done is true when the branch already has the source.
func (u *run) prepare(ctx context.Context) (commit string, info replay.Commit, done bool, err error) {
	source := u.t.source
	infos, err := u.repo.ReadCommits(ctx, []string{source + "^{commit}"})
	if err != nil || infos[0].Tree == "" {
		return "", info, false, fmt.Errorf("%s is not a commit", source)
	}
	info = infos[0]
	src, parents := info.ID, info.Parents
	// A depth-1 checkout's one commit sits on the shallow boundary: its parent is the
	// remote tip it started from, with no need to ask the remote.
	// (Unless the remote is known to have the commit itself: a remote-tracking ref
	// contains it.)
	if len(parents) == 1 && slices.Contains(u.boundary, parents[0]) && !u.tracked(ctx, src) {
		return src, info, false, nil
	}
	tip, err := u.fetch(ctx, []string{u.n.head()}, 0)
	if err != nil {
		return "", info, false, err
	}
	base, err := u.repo.Output(ctx, "merge-base", src, tip[0])
	if err != nil || base == "" {
		return "", info, false, fmt.Errorf("%s has no commit in common with the remote's %s", source, u.n.head())
	}
	count, _ := u.repo.Output(ctx, "rev-list", "--count", src, "^"+base)
	switch count {
	case "0":
		u.notify("%s is on %s already", replay.Short(src), u.n.branch)
		return "", info, true, nil
	case "1":
		if len(parents) == 1 && parents[0] == base {
			return src, info, false, nil
		}
	}
	// Several commits: one commit with the last one's tree, author and message.
	squashed, err := u.repo.CommitTree(ctx, info, src+"^{tree}", base, true)
	if se := (*replay.SignError)(nil); errors.As(err, &se) {
		return "", info, false, se.Failure("nothing was staged")
	} else if err != nil {
		return "", info, false, err
	}
	u.notify("%s commits of %s staged as one, %s", count, source, replay.Short(squashed))
	return squashed, info, false, nil
}

// tracked reports whether a remote-tracking ref contains commit.
func (u *run) tracked(ctx context.Context, commit string) bool {
	out, err := u.repo.Output(ctx, "for-each-ref", "--count=1", "--contains", commit, "refs/remotes/")
	return err != nil || out != "" // when git cannot tell, do not take the short cut
}

// stage pushes commit to a staged ref of its own, retried as any push is, and in the
// same push (not atomic) offers to take the free lease for it: held reports whether
// this job took it, and so gathers. A lease another job holds, or takes first, only
// fails that part of the push (push.Runner's Optional): so one job of many that
// stage at once gathers, and no other job pushes for the lease. A job that does not
// wait (NoWait) stages alone.
func (u *run) stage(ctx context.Context, commit string) (held bool, err error) {
	id, err := newID()
	if err != nil {
		return false, err
	}
	id = signedID(u.Key, u.n.branch, id, commit)
	ref := u.n.staged(id)
	var out, errOut bytes.Buffer
	p := &push.Runner{
		Config: settings.Config{
			Git:      u.GitPath(),
			Dirs:     u.Dirs,
			Env:      u.Env,
			Settings: func() (settings.Settings, error) { return settings.Settings{Policy: u.stagingPolicy()}, nil },
			OnAttempt: func(a retry.Attempt) {
				u.res.Pushes++
				if u.OnAttempt != nil {
					u.OnAttempt(a)
				}
			},
			Note:  u.Note,
			Clock: u.clock,
			Rand:  u.random,
		},
		NoAtomic: true,
	}
	args := append(append([]string(nil), u.t.options...), "--porcelain")
	specs := []string{commit + ":" + ref}
	if !u.NoWait {
		p.Optional = []string{u.n.lease()}
		args = append(args, "--force-with-lease="+u.n.lease()+":")
		specs = append(specs, commit+":"+u.n.lease())
	}
	res, err := p.Run(ctx, append(append(args, u.t.remote), specs...), nil, &out, &errOut)
	if res.ExitCode != 0 {
		u.stderr().Write(errOut.Bytes())
		return false, u.refusedStaging(err, commit, ref)
	}
	u.res.ID, u.res.Staged, u.res.StagedRef = id, commit, ref
	held = !u.NoWait && pushed(res.Report, u.n.lease())
	u.notify("staged %s as %s%s", replay.Short(commit), ref, map[bool]string{true: ", and took the gather lease", false: ""}[held])
	return held, nil
}

// stagingPolicy is the staging push's retry policy: the run's, its deadline what the
// budget leaves.
func (u *run) stagingPolicy() retry.Policy {
	p := u.policy
	if p.Timeout > 0 {
		p.Timeout = max(u.left(), time.Millisecond)
	}
	return p
}

// pushed reports whether a push's report shows ref updated (or already at its value).
func pushed(r push.Report, ref string) bool {
	for _, s := range r.Refs {
		if s.To == ref {
			return !s.Rejected()
		}
	}
	return false
}

// refusedStaging is the error of a staging push that failed for good (err), with what
// the remote's refusal means for a gather.
func (u *run) refusedStaging(err error, commit, ref string) error {
	var pe *failure.Error
	switch {
	case errors.As(err, &pe) && pe.Class == failure.Declined && push.SignatureRule(pe.Policy):
		return fmt.Errorf("the remote refused the staged commit %s for its signature (%s): %w", replay.Short(commit), pe.Message, err)
	case errors.As(err, &pe) && (pe.Class == failure.Declined || pe.Class == failure.Rejected):
		return fmt.Errorf("the remote refused the staged ref %s (%s): it does not accept refs outside "+
			"refs/heads and refs/tags, or a rule forbids them; push with --rebase or --regenerate instead: %w", ref, pe.Message, err)
	}
	return err
}

// look reads the remote's refs of the branch.
func (u *run) look(ctx context.Context) (state, error) {
	begin := u.clock.Now()
	defer func() { u.lookTook = u.since(begin) }()
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
// many commits of each, 0 for all the history the negotiation brings; extra: more
// options, such as --deepen) and returns their values, in order.
func (u *run) fetch(ctx context.Context, refs []string, depth int, extra ...string) ([]string, error) {
	u.fetched = true
	// No maintenance: it would run after every wave, in the jobs' time.
	args := []string{"fetch", "-q", "--no-tags", "--no-write-fetch-head", "--no-auto-maintenance"}
	if depth > 0 {
		args = append(args, fmt.Sprintf("--depth=%d", depth))
	}
	args = append(append(args, extra...), u.t.remote)
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
	// Every value with one git, not one a ref: a wave fetches up to MaxPerWave.
	out, err := u.repo.Output(ctx, "for-each-ref", "--format=%(refname) %(objectname)", "refs/refretry/fetched/")
	if err != nil {
		return nil, fmt.Errorf("reading what was fetched: %w", err)
	}
	have := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if ref, oid, ok := strings.Cut(line, " "); ok {
			have[ref] = oid
		}
	}
	values := make([]string, len(refs))
	for i, l := range locals {
		if values[i] = have[l]; values[i] == "" {
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

// nullID reports whether oid is git's null object id (all zeros), never a commit.
func nullID(oid string) bool { return strings.Trim(oid, "0") == "" }

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
