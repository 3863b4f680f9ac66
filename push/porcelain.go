package push

import "strings"

// RefStatus is one ref's line of `git push --porcelain` output:
// `<flag>\t<from>:<to>\t<summary>[ (<reason>)]`.
type RefStatus struct {
	Flag    byte   // ' ' fast-forward, '+' forced, '-' deleted, '*' new, '!' rejected, '=' up to date
	From    string // the source as given ("" for a deletion)
	To      string // the destination ref
	Summary string // "[rejected]", "[remote rejected]", "[new branch]", "abc..def", …
	Reason  string // the text in parentheses, if any
}

// Rejected reports whether the ref was not updated.
func (s RefStatus) Rejected() bool { return s.Flag == '!' }

// RemoteRejected reports whether the server (not the client) refused the ref.
func (s RefStatus) RemoteRejected() bool { return s.Flag == '!' && s.Summary == "[remote rejected]" }

// Report is the parsed porcelain output of one git push.
type Report struct {
	URL  string // from the "To <url>" line
	Refs []RefStatus
	Done bool // the final "Done" line was printed
}

// ParsePorcelain reads `git push --porcelain` standard output. Lines it does not
// recognise are skipped; a push that printed nothing has an empty Report.
func ParsePorcelain(out []byte) Report {
	var r Report
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case line == "Done":
			r.Done = true
		case strings.HasPrefix(line, "To "):
			r.URL = line[len("To "):]
		default:
			if s, ok := parseRefLine(line); ok {
				r.Refs = append(r.Refs, s)
			}
		}
	}
	return r
}

func parseRefLine(line string) (RefStatus, bool) {
	if len(line) < 3 || line[1] != '\t' || !strings.ContainsRune(" +-*!=X", rune(line[0])) {
		return RefStatus{}, false
	}
	spec, status, ok := strings.Cut(line[2:], "\t")
	if !ok {
		return RefStatus{}, false
	}
	// Ref names cannot contain ':', and a source expression is printed as given
	// (it may contain ':' only in forms push refuses), so the last ':' splits them.
	i := strings.LastIndexByte(spec, ':')
	if i < 0 {
		return RefStatus{}, false
	}
	s := RefStatus{Flag: line[0], From: spec[:i], To: spec[i+1:], Summary: status}
	if j := strings.Index(status, " ("); j >= 0 && strings.HasSuffix(status, ")") {
		s.Summary, s.Reason = status[:j], status[j+2:len(status)-1]
	}
	return s, true
}

// String formats the status as git's porcelain line (without the newline).
func (s RefStatus) String() string {
	out := string(s.Flag) + "\t" + s.From + ":" + s.To + "\t" + s.Summary
	if s.Reason != "" {
		out += " (" + s.Reason + ")"
	}
	return out
}
