package cli

import (
	"time"

	"github.com/refretry/refretry/ci"
	"github.com/refretry/refretry/gather"
	"github.com/refretry/refretry/retry"
	"github.com/refretry/refretry/settings"
)

// Options are refretry's own options, which come before the command: kong's grammar
// for them (spelling, placeholder, help, and unset: what applies when unset, said in
// words), and settings below for what kong's tags cannot say as the house needs it.
// Precedence: flag (or a caller's set) > environment > git config > default. An
// option with no environment variable (-C) is the command line's alone.
type Options struct {
	Dirs            []string               `name:"directory" short:"C" sep:"none" placeholder:"PATH" help:"Run as if started in PATH (repeatable, as git -C)."`
	Git             Setting[string]        `name:"git" placeholder:"PATH" unset:"git on PATH" help:"git executable to run."`
	Timeout         Setting[time.Duration] `name:"timeout" placeholder:"DURATION" help:"Total retry budget: no attempt starts after it. Not given, a push that waits on other jobs (--rebase, --regenerate, --gather, push-rebase) counts only time in which the remote did not move, up to 15 minutes (docs/push.md)."`
	MaxAttempts     Setting[int]           `name:"max-attempts" placeholder:"N" help:"Most attempts, the first included; 0 means no cap."`
	InitialDelay    Setting[time.Duration] `name:"initial-delay" placeholder:"DURATION" help:"Delay before the first retry, before jitter."`
	MaxDelay        Setting[time.Duration] `name:"max-delay" placeholder:"DURATION" help:"Cap on the delay between attempts."`
	StaleAfter      Setting[time.Duration] `name:"stale-after" placeholder:"DURATION" help:"A lock older than this is stale: stop at once instead of waiting."`
	PIDGrace        Setting[time.Duration] `name:"pid-grace" placeholder:"DURATION" unset:"--stale-after" help:"A lock whose ~pid.lock holder is not running here is stale only once older than this: a holder in another container's pid namespace looks the same."`
	BreakStaleLocks Switch                 `name:"break-stale-locks" help:"Remove a stale lock (older than --stale-after with no running holder on record, or than --pid-grace with a holder pid not running here), then retry."`
	Coalesce        Switch                 `name:"coalesce" help:"Let concurrent single-ref updates of one repository be committed together by one git, on the files backend too (on by default for reftable; docs/coalescing.md)."`
	PushRebase      Switch                 `name:"push-rebase" help:"Rebase a push that lost a race, as push --rebase does, when it can be rebased safely: not a force push, a lease, a mirror, a deletion or a tag. For pushes whose command line is not refretry's: the git shim's git push (docs/push.md)."`
	LogFormat       Setting[ci.Format]     `name:"log-format" placeholder:"FORMAT" help:"Log format on stderr: auto, text, json, github or gitlab (auto: github or gitlab when detected, else refretry's plain lines)."`
	LogFile         Setting[string]        `name:"log-file" placeholder:"PATH" help:"Also append JSON lines to PATH."`
}

// settings are o's options that the environment and git config may set, each with
// its environment variable, its git config key and its default (the libraries'): the
// one place these are said. They are Go values rather than kong's envar and default
// tags because kong reads those from the process (os.LookupEnv), where refretry takes
// the caller's environment as a parameter, and because a default kong fills in hides
// whether the option was given, which the precedence needs. Declaring is idempotent.
func (o *Options) settings() []setting {
	p := retry.DefaultPolicy()
	return []setting{
		o.Git.is("REFRETRY_GIT", "", "git"),
		o.Timeout.is("REFRETRY_TIMEOUT", "refretry.timeout", p.Timeout),
		o.MaxAttempts.is("REFRETRY_MAX_ATTEMPTS", "refretry.maxAttempts", p.MaxAttempts),
		o.InitialDelay.is("REFRETRY_INITIAL_DELAY", "refretry.initialDelay", p.InitialDelay),
		o.MaxDelay.is("REFRETRY_MAX_DELAY", "refretry.maxDelay", p.MaxDelay),
		o.StaleAfter.is("REFRETRY_STALE_AFTER", "refretry.staleAfter", settings.DefaultStaleAfter),
		o.PIDGrace.is("REFRETRY_PID_GRACE", "refretry.pidGrace", 0),
		o.BreakStaleLocks.is("REFRETRY_BREAK_STALE_LOCKS", "refretry.breakStaleLocks"),
		o.Coalesce.is("REFRETRY_COALESCE", "refretry.coalesce"),
		o.PushRebase.is("REFRETRY_PUSH_REBASE", "refretry.pushRebase"),
		o.LogFormat.is("REFRETRY_LOG_FORMAT", "refretry.logFormat", "auto"),
		o.LogFile.is("REFRETRY_LOG_FILE", "refretry.logFile", ""),
	}
}

// PushOptions are push's own options, kong's grammar as Options are (none has an
// environment variable or a git config key). They may appear anywhere among git
// push's arguments before "--" (gitArgs, push.go). form is the usage line that names
// the option (help.go): push's, push --gather's, which the option named after the
// form (--gather) opens, or push --api's.
type PushOptions struct {
	NoAtomic    bool                   `name:"no-atomic" form:"push" help:"Push without --atomic: refs the remote accepts are updated even when others are rejected."`
	Rebase      bool                   `name:"rebase" form:"push" help:"When a branch was rejected because the remote moved it, replay the pushed commits onto the remote's tip and push again (from a branch, a detached HEAD or <commit>:<branch>)."`
	Regenerate  Setting[string]        `of:"push" name:"regenerate" form:"push" placeholder:"COMMAND" help:"When a branch was rejected because the remote moved it (or --rebase conflicts), reset the checked-out commit and work tree to the remote's tip, run this shell command there, commit what it changed with the original commit's author and message, and push again."`
	Gather      bool                   `name:"gather" form:"gather" help:"Land the commit on the branch with the other jobs pushing to it: stage it in a ref of its own, and let one job replay everyone's onto the branch in one push (docs/push.md). Takes <remote> [<src>:]<branch>; with --rebase or --regenerate, a commit that conflicts falls back to them."`
	GatherMax   Setting[int]           `of:"push" name:"gather-max" form:"gather" placeholder:"N" help:"Staged commits one gather takes at most (forges cap the refs one push updates)."`
	GatherLease Setting[time.Duration] `of:"push" name:"gather-lease" form:"gather" placeholder:"DURATION" help:"How long a gather lease may stay unchanged before a waiting job takes it over (its holder is taken to be gone); a job doubles it after each take-over it makes."`
	// The gather key itself comes from REFRETRY_GATHER_KEY or a file: never the command line, which /proc shows.
	GatherKeyFile Setting[string]        `of:"push" name:"gather-key-file" form:"gather" placeholder:"FILE" help:"Read the gather key (the secret the pipeline's jobs share, docs/security.md) from this file instead of REFRETRY_GATHER_KEY."`
	GatherMaxAge  Setting[time.Duration] `of:"push" name:"gather-max-age" form:"gather" placeholder:"DURATION" help:"With a gather key: how old a staged commit may be and still land (older ones stay staged, named in a note)."`
	NoWait        bool                   `name:"no-wait" form:"gather" help:"Stage the commit and exit 0 without waiting for it to land: for a fan-in, where a later job runs refretry gather land."`
	API           bool                   `name:"api" form:"api" help:"Land the commits through the forge's API instead of git push, so that the forge makes them (on GitHub, with the job's App token, signed and Verified): <remote> [<src>:]<branch>, replayed onto the branch as --rebase does; with --gather, the gatherer lands each wave that way (docs/push.md#api-commits). The token comes from REFRETRY_API_TOKEN, else GITHUB_TOKEN, GITEA_TOKEN or CI_JOB_TOKEN."`
	Forge         Setting[string]        `of:"push" name:"forge" form:"api" placeholder:"FORGE" help:"With --api: github, gitea or gitlab (found from the CI's environment, else the remote's host, when not given)."`
}

// settings are push's valued options with their defaults (the gather package's);
// their tag of says that they are push's: a number or a duration must be positive.
func (o *PushOptions) settings() []setting {
	return []setting{
		o.Regenerate.of(""),
		o.GatherMax.of(gather.DefaultMaxPerWave),
		o.GatherLease.of(gather.DefaultLeaseTimeout),
		o.GatherKeyFile.of(""),
		o.GatherMaxAge.of(gather.DefaultMaxAge),
		o.Forge.of(""),
	}
}
