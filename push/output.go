package push

import (
	"fmt"
	"io"
	"strings"

	"github.com/refretry/refretry/internal/gitexec"
)

// writeOutput hands the final attempt's output to the caller, its progress left
// out: that was written as git wrote it (progress.go). With --porcelain the rest is
// git's, byte for byte. Without it, git's stderr is passed on with the porcelain
// rendered as git's human table where git would have printed it, and what git printed
// on standard output besides the porcelain (--set-upstream's "branch 'x' set up to
// track 'origin/x'.") stays there.
func (r *pushRun) writeOutput(args Args, last gitexec.Captured) error {
	last.Stderr = withoutProgress(last.Stderr)
	if args.Porcelain {
		if err := write(r.stdout, last.Stdout); err != nil {
			return err
		}
		return write(r.stderr, last.Stderr)
	}
	if err := write(r.stdout, notPorcelain(last.Stdout)); err != nil {
		return err
	}
	// git prints its progress (written already), the server's lines and its own
	// warnings while pushing, the table after, then its errors and hints
	// (afterTable); with --porcelain the table went to stdout, so put it back
	// between them.
	var before, after []string
	for _, line := range splitLines(last.Stderr) {
		if len(after) > 0 || afterTable(line) {
			after = append(after, line)
		} else {
			before = append(before, line)
		}
	}
	var b strings.Builder
	for _, l := range before {
		b.WriteString(l + "\n")
	}
	rep := ParsePorcelain(last.Stdout)
	if !args.Quiet || last.Code != 0 {
		b.WriteString(humanTable(rep, args.Verbose))
	}
	for _, l := range after {
		b.WriteString(l + "\n")
	}
	return write(r.stderr, []byte(b.String()))
}

// afterTable reports whether git push prints line after its table of refs (transport.c
// and builtin/push.c, git 2.39 to 2.55): the tracking refs it updates when verbose, then
// "failed to push some refs" and the advice that follows it.
func afterTable(line string) bool {
	return strings.HasPrefix(line, "updating local tracking ref ") ||
		strings.HasPrefix(line, "error: failed to push some refs to ") ||
		strings.HasPrefix(line, "hint:")
}

// notPorcelain is git push's standard output without the porcelain's lines ("To <url>",
// one per ref, "Done").
func notPorcelain(out []byte) []byte {
	var b strings.Builder
	for line := range strings.Lines(string(out)) {
		l := strings.TrimSuffix(line, "\n")
		if _, ref := parseRefLine(l); ref || l == "Done" || strings.HasPrefix(l, "To ") {
			continue
		}
		b.WriteString(line)
	}
	return []byte(b.String())
}

// writeVerified reports a push proved by verification as the retry git would have
// run would report it: every ref up to date.
func (r *pushRun) writeVerified(args Args, url string, refs []RefStatus) Report {
	rep := Report{URL: url, Done: true}
	for _, s := range refs {
		s.Flag, s.Summary, s.Reason = '=', "[up to date]", ""
		rep.Refs = append(rep.Refs, s)
	}
	if args.Porcelain {
		var b strings.Builder
		if url != "" {
			b.WriteString("To " + url + "\n")
		}
		for _, s := range rep.Refs {
			b.WriteString(s.String() + "\n")
		}
		b.WriteString("Done\n")
		_ = write(r.stdout, []byte(b.String()))
		return rep
	}
	if !args.Quiet {
		_ = write(r.stderr, []byte(humanTable(rep, args.Verbose)))
	}
	return rep
}

// humanTable renders a report as git push prints it without --porcelain: up-to-date
// refs only when verbose, "Everything up-to-date" when nothing else happened.
func humanTable(rep Report, verbose bool) string {
	width := 17 // git's 2×abbrev+3 for the default abbreviation
	var shown []RefStatus
	for _, s := range rep.Refs {
		if s.Flag == '=' && !verbose {
			continue
		}
		shown = append(shown, s)
		width = max(width, len(s.Summary))
	}
	if len(shown) == 0 {
		if len(rep.Refs) > 0 {
			return "Everything up-to-date\n"
		}
		return ""
	}
	var b strings.Builder
	if rep.URL != "" {
		b.WriteString("To " + rep.URL + "\n")
	}
	for _, s := range shown {
		fmt.Fprintf(&b, " %c %-*s ", s.Flag, width, s.Summary)
		if s.From != "" {
			b.WriteString(prettify(s.From) + " -> " + prettify(s.To))
		} else {
			b.WriteString(prettify(s.To))
		}
		if s.Reason != "" {
			b.WriteString(" (" + s.Reason + ")")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// prettify shortens a ref name as git's table does.
func prettify(name string) string {
	for _, p := range []string{"refs/heads/", "refs/tags/", "refs/remotes/"} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			return rest
		}
	}
	return name
}

func splitLines(b []byte) []string {
	s := strings.TrimSuffix(string(b), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func write(w io.Writer, b []byte) error {
	if w == nil || len(b) == 0 {
		return nil
	}
	_, err := w.Write(b)
	return err
}
