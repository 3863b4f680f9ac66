package ci

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// gitlabHandler writes for GitLab CI's job log: the attempts of an operation inside a
// collapsed section named refretry_<operation id> (opened by the first attempt record,
// closed by the final one), then one summary line outside it, and the advice, if any,
// on a line of its own. Each record is one Write.
type gitlabHandler struct {
	st    *groupState
	attrs attrSet
}

// newGitLabHandler returns a gitlabHandler writing to w.
func newGitLabHandler(w io.Writer) *gitlabHandler {
	return &gitlabHandler{st: &groupState{out: output{w: w}}}
}

// Enabled reports true for every level.
func (h *gitlabHandler) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs returns a handler that adds attrs to every record.
func (h *gitlabHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &gitlabHandler{st: h.st, attrs: h.attrs.with(attrs)}
}

// WithGroup returns a handler that qualifies later attributes with name.
func (h *gitlabHandler) WithGroup(name string) slog.Handler {
	return &gitlabHandler{st: h.st, attrs: h.attrs.group(name)}
}

// sectionName is a name GitLab accepts ([A-Za-z0-9_.-]) that no other operation uses.
func sectionName(id string) string {
	var b strings.Builder
	b.WriteString("refretry_")
	for _, r := range id {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Handle writes the record.
func (h *gitlabHandler) Handle(_ context.Context, r slog.Record) error {
	f := h.attrs.fields(r)
	id := f.str(keyOperationID)
	name := sectionName(id)
	unix := r.Time.Unix()
	var b strings.Builder
	h.st.out.mu.Lock()
	defer h.st.out.mu.Unlock()
	closeSection := func() {
		fmt.Fprintf(&b, "\x1b[0Ksection_end:%d:%s\r\x1b[0K\n", unix, name)
		h.st.open = false
	}
	switch r.Message {
	case msgAttempt:
		a := f.attempt()
		if !h.st.open {
			fmt.Fprintf(&b, "\x1b[0Ksection_start:%d:%s[collapsed=true]\r\x1b[0K%s\n",
				unix, name, printable("refretry: "+f.command()+", operation "+id))
			h.st.open = true
		}
		line(&b, attemptLine(a))
		if a.Final {
			closeSection()
		}
	case msgSummary:
		if h.st.open {
			closeSection()
		}
		s := f.summary()
		line(&b, "refretry: "+s.headline(f.command())+" (operation "+id+")")
		if s.Advice != "" {
			line(&b, "refretry: "+s.Advice)
		}
	case msgNote:
		line(&b, "refretry: "+f.str(keyText))
	default:
		line(&b, "refretry: "+h.attrs.other(r))
	}
	if _, err := io.WriteString(h.st.out.w, b.String()); err != nil {
		return fmt.Errorf("writing log: %w", err)
	}
	return nil
}
