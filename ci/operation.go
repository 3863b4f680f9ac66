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
	// Format is the format of the records written to Stderr. Auto is resolved with
	// Getenv; the empty format writes no records to Stderr.
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
	relay    Relay
}

// New starts an operation's log.
func New(c Config) (*Operation, error) {
	o := &Operation{id: c.ID, getenv: c.Getenv, now: c.Now, random: c.Random}
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
		h, err := NewHandler(o.format, c.Stderr)
		if err != nil {
			return nil, err
		}
		o.handlers = append(o.handlers, h)
	}
	if c.LogFile != nil {
		o.handlers = append(o.handlers, NewJSONHandler(c.LogFile))
	}
	common := []slog.Attr{slog.Int(KeySchema, SchemaVersion), slog.String(KeyOperationID, o.id), slog.String(KeyCommand, c.Command)}
	for i, h := range o.handlers {
		o.handlers[i] = h.WithAttrs(common)
	}
	switch o.format {
	case GitHub:
		tok, err := token(o.random)
		if err != nil {
			return nil, err
		}
		o.relay = &stopCommandsRelay{w: c.Stderr, token: tok}
	case GitLab:
		o.relay = escRelay{c.Stderr}
	default:
		o.relay = passRelay{c.Stderr}
	}
	return o, nil
}

// NewHandler returns the handler for a resolved format (not Auto) writing to w.
func NewHandler(f Format, w io.Writer) (slog.Handler, error) {
	switch f {
	case Text:
		return NewTextHandler(w), nil
	case JSON:
		return NewJSONHandler(w), nil
	case GitHub:
		return NewGitHubHandler(w), nil
	case GitLab:
		return NewGitLabHandler(w), nil
	}
	return nil, fmt.Errorf("%w %q", ErrUnknownFormat, f)
}

// ID is the operation id every record carries.
func (o *Operation) ID() string { return o.id }

// Format is the resolved format of the records written to stderr ("" for none).
func (o *Operation) Format() Format { return o.format }

// Relay is the writer git's stderr must go through; see [Relay].
func (o *Operation) Relay() Relay { return o.relay }

// Handler sends records to every destination of the operation, each record carrying
// the schema version and the operation id.
func (o *Operation) Handler() slog.Handler { return fanout(o.handlers) }

// Attempt records one finished attempt.
func (o *Operation) Attempt(ctx context.Context, a Attempt) error {
	return o.emit(ctx, a.level(), MsgAttempt, a.attrs())
}

// Note records something refretry did besides running git.
func (o *Operation) Note(ctx context.Context, n Note) error {
	return o.emit(ctx, slog.LevelInfo, MsgNote, n.attrs())
}

// Finish flushes the relay, records the summary, and for the GitHub format appends a
// row to GITHUB_STEP_SUMMARY and the step outputs (operation-id, result, attempts,
// updated-refs: the refs of a successful operation, one a line) to GITHUB_OUTPUT when
// they name files. It returns every error met, joined.
func (o *Operation) Finish(ctx context.Context, s Summary) error {
	errs := []error{o.relay.Close(), o.emit(ctx, s.level(), MsgSummary, s.attrs())}
	if o.format != GitHub {
		return errors.Join(errs...)
	}
	if path := o.getenv("GITHUB_STEP_SUMMARY"); path != "" {
		errs = append(errs, AppendStepSummary(path, o.id, s))
	}
	if path := o.getenv("GITHUB_OUTPUT"); path != "" {
		var updated string
		if s.Result == ResultSuccess {
			refs := s.Refs
			if len(refs) > MaxRefs {
				refs = refs[:MaxRefs]
			}
			updated = strings.Join(refs, "\n")
		}
		errs = append(errs, WriteOutputs(path, o.random, []Output{
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
	return fanout(o.handlers).Handle(ctx, r)
}

// fanout is a handler that passes each record to all of its handlers.
type fanout []slog.Handler

func (f fanout) Enabled(ctx context.Context, l slog.Level) bool {
	for _, h := range f {
		if h.Enabled(ctx, l) {
			return true
		}
	}
	return false
}

func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	var errs []error
	for _, h := range f {
		if h.Enabled(ctx, r.Level) {
			errs = append(errs, h.Handle(ctx, r.Clone()))
		}
	}
	return errors.Join(errs...)
}

func (f fanout) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithAttrs(attrs)
	}
	return out
}

func (f fanout) WithGroup(name string) slog.Handler {
	out := make(fanout, len(f))
	for i, h := range f {
		out[i] = h.WithGroup(name)
	}
	return out
}
