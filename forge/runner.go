package forge

import (
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/google/uuid"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/apicommit"
	"github.com/refretry/refretry/internal/engine"
	"github.com/refretry/refretry/internal/httpconf"
	"github.com/refretry/refretry/internal/replay"
	"github.com/refretry/refretry/push"
	"github.com/refretry/refretry/settings"
)

// API says which forge's API makes the commits, where it is, and the token it takes.
// The zero value finds all three (see the package comment).
type API struct {
	// Forge is "github", "gitea" (Forgejo too) or "gitlab"; "" finds it from the CI's
	// environment, else the remote's host.
	Forge string
	// URL is the API's root (https://api.github.com, https://<host>/api/v1,
	// https://<host>/api/v4); "" finds it: REFRETRY_API_URL, the CI's own, or made
	// from the remote's URL.
	URL string
	// Token is the API token; "" reads REFRETRY_API_TOKEN from the Runner's Env,
	// else the CI's own (GITHUB_TOKEN; GITEA_TOKEN, GITHUB_TOKEN; CI_JOB_TOKEN). It is
	// sent in a request header and written nowhere else.
	Token string
	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client
}

// Runner lands a job's commits on a branch through a forge's API, retrying what
// another attempt can get past (see the package comment). Its fields are its
// configuration, which Run only reads: one Runner may run any number of landings,
// one after another or at once.
//
// Its Config's Env is the caller's whole environment, the token's variables
// included. Settings supplies the retry schedule and budget, asked at most once a run
// (after the first failure); as for push --rebase, a budget that is Progressive starts
// over each time the branch moved under the run. Note is told what the Runner did
// besides the requests (a replay onto a new head, the route, the commit landed, the
// checkout moved), as a kind ("api") and a line.
type Runner struct {
	settings.Config
	API API
}

// Result is what a Run did.
type Result struct {
	// ExitCode is the code to exit with: 0 when the job's commits are on the branch,
	// 1 when the forge refused them (a rule, a change its API cannot write, a replay
	// that conflicts), failure.ExitGitNotFound when git could not be started, 128 for
	// anything else that ended the run, 129 for arguments Run cannot take.
	ExitCode int
	Ref      string // refs/heads/<branch>
	// Commit is the commit the forge made last, which the branch held when it was
	// made; the branch's value when it had the job's changes already.
	Commit   string
	Route    string // the API the forge took, for the reader
	Requests int    // requests sent to the API
	Attempts int
}

// Run lands the commits of the git push that args describe (git push's options, then
// <remote> and one [<src>:]<branch>, as push.ReadTarget reads them; the options go
// to the staging push) through the forge's API. stdin is not read and nothing is
// written to stdout (nil will do for both); stderr gets, on success, the line git
// push would print for the ref, and on failure the forge's answer. The error is a
// *push.TargetError for arguments it cannot take, a *failure.Error (or a retry
// error wrapping one) when the landing failed, or one matching failure.ErrGitNotFound.
func (r *Runner) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (Result, error) {
	t, err := push.ReadTarget(args)
	if err != nil {
		return Result{ExitCode: 129}, err
	}
	if stderr == nil {
		stderr = io.Discard
	}
	u := &run{Runner: r, t: t, stderr: stderr, fresh: true,
		repo: replay.Repo{Git: r.GitPath(), Dirs: r.Dirs, Env: r.Env, Sign: &replay.Signing{Never: true}}}
	res := Result{Ref: "refs/heads/" + t.Branch}
	if err := u.setup(ctx); err != nil {
		res.ExitCode = exitCode(err)
		return res, err
	}
	res.ExitCode, err = engine.For(&r.Config, &res.Attempts).Run(ctx, u)
	res.Commit, res.Requests = u.landed, u.ep.Requests()
	if u.plan != nil {
		res.Route = u.plan.Route
	}
	return res, err
}

// exitCode is the code a run that ended with err before its attempts exits with.
func exitCode(err error) int {
	var f *failure.Error
	if errors.As(err, &f) {
		return f.ExitCode
	}
	return failure.ExitCode(128, err)
}

// run is one Run: the engine's command.
type run struct {
	*Runner
	t      push.Target
	repo   replay.Repo
	ep     apicommit.Endpoint
	url    string // the remote's URL, without credentials
	http   httpconf.Settings
	env    []string
	stderr io.Writer

	src     string          // the source commit
	origin  string          // where the job's commits start (their first one's parent)
	base    string          // the branch's value the last replay is on
	tip     string          // that replay's tip
	plan    *apicommit.Plan // the landing of tip, checked
	stage   string          // the staging ref: refs/refretry/api/<branch>/<uuid>
	staged  string          // what the staging ref holds on the remote ("" nothing)
	landed  string          // the commit the forge made last
	nothing bool            // the branch has the job's changes already
	fresh   bool            // the next attempt fetches the branch and replays first
}

// setup reads the remote's URL and finds the forge's endpoint; a failure says what
// is missing, before anything is sent.
func (u *run) setup(ctx context.Context) error {
	ep, raw, err := apicommit.ForRemote(ctx, u.repo, u.Env, u.t.Remote, apicommit.Want(u.API))
	if ce := (*apicommit.ConfigError)(nil); errors.As(err, &ce) {
		return configFailure(ce.Msg)
	}
	if err != nil {
		return err
	}
	u.ep, u.url = ep, apicommit.Anonymous(raw)
	u.http = httpconf.Look(ctx, u.GitPath(), u.Dirs, u.Env, u.t.Remote, httpconf.Floor{})
	u.env = u.http.Env(u.Env)
	u.stage = "refs/refretry/api/" + u.t.Branch + "/" + uuid.NewString()
	return nil
}

// configFailure is a forge, API or token that could not be found: exit 128, with
// the reason as refretry's last line.
func configFailure(msg string) *failure.Error {
	line := "push --api: " + msg
	return &failure.Error{Command: "push", Class: failure.Other, ExitCode: 128, Message: line, Advice: line}
}
