package ci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Config says where an Operation's records go.
type Config struct {
	// Command is the refretry command the operation runs ("update-ref", "push", "fetch"),
	// which every record carries and the lines for people name.
	Command string
	// Shim says that the operation is a git command run through refretry's git shim:
	// its caller is a program that ran git, which gets git's output and exit code and
	// decides what a failure means (a tool's own retry loop, say). A failure is then
	// git's, not refretry's: its summary is a warning, not an error, and every record
	// carries "shim": true.
	Shim bool
	// Format is the format of the records written to Stderr ("text", "json", …; see
	// [Format]). "auto" is resolved with Getenv; the empty format writes no records to
	// Stderr.
	Format Format
	Stderr io.Writer
	// LogFile, if not nil, receives every record as a JSON line (see OpenLogFile).
	LogFile io.Writer
	// Getenv reads the environment: CI detection, and for the GitHub format the
	// GITHUB_STEP_SUMMARY and GITHUB_OUTPUT paths. Nil reads nothing.
	Getenv func(string) string
	// ID is the operation id; empty means a new UUID (version 7, so ids sort by time).
	ID string
	// Now and Random replace the clock and crypto/rand (tests use them for goldens).
	Now    func() time.Time
	Random io.Reader
}

// Operation is one refretry invocation's log: its attempts and its outcome.
type Operation struct {
	id       string
	format   Format
	handlers []slog.Handler
	getenv   func(string) string
	now      func() time.Time
	random   io.Reader
	relay    stderrRelay
	retried  bool // an attempt failed and another followed
	shim     bool // Config.Shim
}

// New starts an operation's log. It fails for a format that is not one of [Format]'s
// names, and when no id or random token can be drawn.
func New(c Config) (*Operation, error) {
	o := &Operation{id: c.ID, getenv: c.Getenv, now: c.Now, random: c.Random, shim: c.Shim}
	if o.getenv == nil {
		o.getenv = func(string) string { return "" }
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.id == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("operation id: %w", err)
		}
		o.id = id.String()
	}
	if c.Format != "" {
		o.format = c.Format.Resolve(o.getenv)
		h, err := newHandler(o.format, c.Stderr)
		if err != nil {
			return nil, err
		}
		o.handlers = append(o.handlers, h)
	}
	if c.LogFile != nil {
		o.handlers = append(o.handlers, newJSONHandler(c.LogFile))
	}
	common := []slog.Attr{slog.Int(keySchema, schemaVersion), slog.String(keyOperationID, o.id), slog.String(keyCommand, c.Command)}
	if c.Shim {
		common = append(common, slog.Bool(keyShim, true))
	}
	for i, h := range o.handlers {
		o.handlers[i] = h.WithAttrs(common)
	}
	switch o.format {
	case formatGitHub:
		tok, err := token(o.random)
		if err != nil {
			return nil, err
		}
		o.relay = &stopCommandsRelay{w: c.Stderr, token: tok}
	case formatGitLab:
		o.relay = escRelay{c.Stderr}
	default:
		o.relay = passRelay{c.Stderr}
	}
	return o, nil
}

// newHandler returns the handler for a resolved format (not "auto") writing to w.
func newHandler(f Format, w io.Writer) (slog.Handler, error) {
	switch f {
	case formatText:
		return newTextHandler(w), nil
	case formatJSON:
		return newJSONHandler(w), nil
	case formatGitHub:
		return newGitHubHandler(w), nil
	case formatGitLab:
		return newGitLabHandler(w), nil
	}
	return nil, fmt.Errorf("%w %q", errUnknownFormat, f)
}

// ID is the operation id every record carries.
func (o *Operation) ID() string { return o.id }

// Format is the resolved format of the records written to stderr ("" for none).
func (o *Operation) Format() Format { return o.format }

// Relay is the writer git's own stderr must go through, so that nothing git prints is
// read as a CI command: on GitHub it passes whole lines inside ::stop-commands::, on
// GitLab it shows ESC as ^[, elsewhere it passes everything unchanged, to the Stderr
// of the Config. Finish writes out a partial last line it held back.
func (o *Operation) Relay() io.Writer { return o.relay }

// Attempt records one finished attempt.
func (o *Operation) Attempt(ctx context.Context, a Attempt) error {
	if a.Class != "" && !a.Final {
		o.retried = true
	}
	return o.emit(ctx, a.level(), msgAttempt, a.attrs())
}

// Note records something refretry did besides running git, between attempts or
// around them: a stale lock it removed, a rebase, a regeneration, a gather. kind is a
// short stable name ("stale-lock-removed", "rebase", "gather", …), text one line for
// people, without "refretry: ".
func (o *Operation) Note(ctx context.Context, kind, text string) error {
	attrs := []slog.Attr{slog.String(keyKind, bound(kind, 64)), slog.String(keyText, bound(text, maxAdviceLen))}
	return o.emit(ctx, slog.LevelInfo, msgNote, attrs)
}

// Finish flushes the relay, records the summary, and for the GitHub format appends a
// row to GITHUB_STEP_SUMMARY and the step outputs (operation-id, result, attempts,
// updated-refs: the refs of a successful operation, one a line) to GITHUB_OUTPUT when
// they name files. It returns every error met, joined.
func (o *Operation) Finish(ctx context.Context, s Summary) error {
	errs := []error{o.relay.Close(), o.emit(ctx, s.level(o.retried, o.shim), msgSummary, s.attrs())}
	if o.format != formatGitHub {
		return errors.Join(errs...)
	}
	if path := o.getenv("GITHUB_STEP_SUMMARY"); path != "" {
		errs = append(errs, appendStepSummary(path, o.id, s))
	}
	if path := o.getenv("GITHUB_OUTPUT"); path != "" {
		var updated string
		if s.Result == ResultSuccess {
			refs := s.Refs
			if len(refs) > maxRefs {
				refs = refs[:maxRefs]
			}
			updated = strings.Join(refs, "\n")
		}
		errs = append(errs, writeOutputs(path, o.random, []stepOutput{
			{"operation-id", o.id},
			{"result", string(s.Result)},
			{"attempts", strconv.Itoa(s.Attempts)},
			{"updated-refs", updated},
		}))
	}
	return errors.Join(errs...)
}

func (o *Operation) emit(ctx context.Context, level slog.Level, msg string, attrs []slog.Attr) error {
	r := slog.NewRecord(o.now(), level, msg, 0)
	r.AddAttrs(attrs...)
	var errs []error
	for _, h := range o.handlers {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}
