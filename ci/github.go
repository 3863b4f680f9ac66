package ci

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"
)

// githubHandler writes GitHub Actions workflow commands. The attempts of an operation
// go inside one ::group:: (opened by the first attempt record, closed by the final
// one); the summary follows the group, as its level says: a plain line at info (it
// succeeded without retrying a failed attempt), a titled ::warning at warn (it
// succeeded after retries, or it failed as git for the shim's caller, whose failure
// it is), a titled ::error at error (it failed). Each record is one Write.
type githubHandler struct {
	st    *groupState
	attrs attrSet
}

type groupState struct {
	out  output
	open bool
}

// newGitHubHandler returns a githubHandler writing to w (the step's stderr: the runner
// reads commands from both of a step's streams).
func newGitHubHandler(w io.Writer) *githubHandler {
	return &githubHandler{st: &groupState{out: output{w: w}}}
}

// Enabled reports true for every level.
func (h *githubHandler) Enabled(context.Context, slog.Level) bool { return true }

// WithAttrs returns a handler that adds attrs to every record.
func (h *githubHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &githubHandler{st: h.st, attrs: h.attrs.with(attrs)}
}

// WithGroup returns a handler that qualifies later attributes with name.
func (h *githubHandler) WithGroup(name string) slog.Handler {
	return &githubHandler{st: h.st, attrs: h.attrs.group(name)}
}

// Handle writes the record.
func (h *githubHandler) Handle(_ context.Context, r slog.Record) error {
	f := h.attrs.fields(r)
	id := f.str(keyOperationID)
	var b strings.Builder
	h.st.out.mu.Lock()
	defer h.st.out.mu.Unlock()
	switch r.Message {
	case msgAttempt:
		a := f.attempt()
		if !h.st.open {
			b.WriteString(workflowCommand("group", nil, "refretry: "+f.command()+", operation "+id))
			h.st.open = true
		}
		b.WriteString(githubPlain(attemptLine(a)) + "\n")
		if a.Final {
			b.WriteString(workflowCommand("endgroup", nil, ""))
			h.st.open = false
		}
	case msgSummary:
		if h.st.open {
			b.WriteString(workflowCommand("endgroup", nil, ""))
			h.st.open = false
		}
		s := f.summary()
		text := "refretry: " + s.headline(f.command()) + " (operation " + id + ")"
		// The legacy "##[" form is not read inside a "::" command, but break it anyway.
		legacy := strings.NewReplacer("##[", `##\[`)
		switch {
		case s.Result == ResultSuccess && r.Level < slog.LevelWarn: // nothing was retried
			b.WriteString(githubPlain(text) + "\n")
		case s.Result == ResultSuccess:
			b.WriteString(workflowCommand("warning",
				[][2]string{{"title", "refretry: " + f.command() + " retried"}}, legacy.Replace(text)))
		default:
			if s.Advice != "" {
				text += "\n" + s.Advice
			}
			kind, title := "error", "refretry: "+f.command()+" "+string(s.Result)
			if r.Level < slog.LevelError { // git's failure, returned to the program that ran git
				kind, title = "warning", "refretry: git "+f.command()+" "+string(s.Result)+", returned to its caller"
			}
			b.WriteString(workflowCommand(kind, [][2]string{{"title", title}}, legacy.Replace(text)))
		}
	case msgNote:
		b.WriteString(githubPlain("refretry: "+f.str(keyText)) + "\n")
	default:
		b.WriteString(githubPlain("refretry: "+h.attrs.other(r)) + "\n")
	}
	if _, err := io.WriteString(h.st.out.w, b.String()); err != nil {
		return fmt.Errorf("writing log: %w", err)
	}
	return nil
}

// attemptLine describes an attempt in full, for the CI formats' collapsed sections:
// "attempt 2: exit 128, lock-contention on <lock> (age 1.2s, holder pid 42) after
// 1.003s; retrying in 40ms", or "(age 1.2s, holder pid 42 not running here)" when no
// such process can be seen.
func attemptLine(a Attempt) string {
	took := a.Duration.Round(time.Millisecond)
	if a.Class == "" {
		return fmt.Sprintf("attempt %d: ok after %v", a.Number, took)
	}
	s := fmt.Sprintf("attempt %d: exit %d, %s", a.Number, a.ExitCode, cause(a.Class, a.Lock, a.Error))
	var facts []string
	if a.LockAge > 0 {
		facts = append(facts, "age "+a.LockAge.Round(time.Millisecond).String())
	}
	if a.HolderPID > 0 {
		holder := fmt.Sprintf("holder pid %d", a.HolderPID)
		switch {
		case a.HolderUnseen && a.PIDNamespace == "container":
			holder += " not seen from this container"
		case a.HolderUnseen:
			holder += " not running here"
		}
		facts = append(facts, holder)
	}
	if len(facts) > 0 {
		s += " (" + strings.Join(facts, ", ") + ")"
	}
	s += fmt.Sprintf(" after %v", took)
	switch {
	case a.Delay > 0:
		s += fmt.Sprintf("; retrying in %v", a.Delay.Round(time.Millisecond))
	case a.Final:
		s += "; no further attempt"
	}
	return s
}
