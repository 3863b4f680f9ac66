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

// TextHandler writes short lines for people, each starting "refretry: ": one per
// retry (the words refretry prints without a log format), one for the summary with the
// operation id, and the advice, if any, on a line of its own. A failed final attempt
// gets no line of its own: the summary says it.
type TextHandler struct {
	out   *output
	attrs attrSet
}

// NewTextHandler returns a TextHandler writing to w.
func NewTextHandler(w io.Writer) *TextHandler { return &TextHandler{out: &output{w: w}} }

// Enabled reports true for every level: an operation emits few records.
func (h *TextHandler) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs returns a handler that adds attrs to every record.
func (h *TextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &TextHandler{out: h.out, attrs: h.attrs.with(attrs)}
}

// WithGroup returns a handler that qualifies later attributes with name.
func (h *TextHandler) WithGroup(name string) slog.Handler {
	return &TextHandler{out: h.out, attrs: h.attrs.group(name)}
}

// Handle writes the record's lines with one Write.
func (h *TextHandler) Handle(_ context.Context, r slog.Record) error {
	f := h.attrs.fields(r)
	var b strings.Builder
	switch r.Message {
	case MsgAttempt:
		if a := f.attempt(); a.Class != "" && !a.Final {
			line(&b, fmt.Sprintf("refretry: attempt %d failed (%s); retrying in %v",
				a.Number, cause(a.Class, a.Lock, a.Error), a.Delay.Round(time.Millisecond)))
		}
	case MsgSummary:
		s := f.summary()
		line(&b, "refretry: "+s.Headline()+" (operation "+f.str(KeyOperationID)+")")
		if s.Advice != "" {
			line(&b, "refretry: "+s.Advice)
		}
	case MsgNote:
		line(&b, "refretry: "+f.str(KeyText))
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
