package ci

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// textHandler writes short lines for people, each starting "refretry: ": one per
// retry (the words refretry prints without a log format), one for the summary with the
// operation id, and the advice, if any, on a line of its own. A failed final attempt
// gets no line of its own: the summary says it.
type textHandler struct {
	out   *output
	attrs attrSet
}

// newTextHandler returns a textHandler writing to w.
func newTextHandler(w io.Writer) *textHandler { return &textHandler{out: &output{w: w}} }

// Enabled reports true for every level: an operation emits few records.
func (h *textHandler) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs returns a handler that adds attrs to every record.
func (h *textHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &textHandler{out: h.out, attrs: h.attrs.with(attrs)}
}

// WithGroup returns a handler that qualifies later attributes with name.
func (h *textHandler) WithGroup(name string) slog.Handler {
	return &textHandler{out: h.out, attrs: h.attrs.group(name)}
}

// Handle writes the record's lines with one Write.
func (h *textHandler) Handle(_ context.Context, r slog.Record) error {
	f := h.attrs.fields(r)
	var b strings.Builder
	switch r.Message {
	case msgAttempt:
		if a := f.attempt(); a.Class != "" && !a.Final {
			line(&b, fmt.Sprintf("refretry: attempt %d failed (%s); retrying in %v",
				a.Number, cause(a.Class, a.Lock, a.Error), a.Delay.Round(time.Millisecond)))
		}
	case msgSummary:
		s := f.summary()
		line(&b, "refretry: "+s.headline(f.command())+" (operation "+f.str(keyOperationID)+")")
		if s.Advice != "" {
			line(&b, "refretry: "+s.Advice)
		}
	case msgNote:
		line(&b, "refretry: "+f.str(keyText))
	default:
		line(&b, "refretry: "+h.attrs.other(r))
	}
	return h.out.write(b.String())
}

// line appends s, made printable, and a newline.
func line(b *strings.Builder, s string) {
	b.WriteString(printable(s))
	b.WriteByte('\n')
}

// output is a writer shared by a handler and those derived from it: one Write per
// record, never two at once.
type output struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *output) write(s string) error {
	if s == "" {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, err := io.WriteString(o.w, s); err != nil {
		return fmt.Errorf("writing log: %w", err)
	}
	return nil
}
