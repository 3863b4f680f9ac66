package gitserver

import (
	"net/url"
	"strings"
)

// Forge names a forge front end whose answers to pushes the server imitates.
type Forge string

const (
	// ForgeGit answers every push with git's own receive-pack output, untouched.
	ForgeGit Forge = ""
	// ForgeGitHub puts a ref's "cannot lock ref" failure in its porcelain reason and
	// sends no remote: line for it (transcribed; see the package comment).
	ForgeGitHub Forge = "github"
	// ForgeGitLab reports a lost compare-and-swap as "incorrect old value provided"
	// with no remote: line (transcribed; see the package comment).
	ForgeGitLab Forge = "gitlab"
)

func (f Forge) valid() bool { return f == ForgeGit || f == ForgeGitHub || f == ForgeGitLab }

// absorb decides whether a remote message line reports the failure of one of the
// rejected refs in the way this forge folds into the ref's reason. If so it returns the
// ref and its new reason, and the line is not sent.
func (f Forge) absorb(line string, rejected []string) (ref, reason string, ok bool) {
	msg, ok := strings.CutPrefix(line, "error: ")
	if !ok {
		return "", "", false
	}
	for _, r := range rejected {
		detail, ok := strings.CutPrefix(msg, "cannot lock ref '"+r+"': ")
		if !ok && f == ForgeGitHub && strings.HasPrefix(msg, "'") &&
			strings.HasSuffix(msg, "' exists; cannot create '"+r+"'") {
			// The reftable backend reports a directory/file conflict without "cannot
			// lock ref"; GitHub's reason has it.
			detail, ok = msg, true
		}
		if !ok {
			continue
		}
		switch f {
		case ForgeGitHub:
			return r, "cannot lock ref '" + r + "': " + detail, true
		case ForgeGitLab:
			if isCASDetail(detail) {
				return r, "incorrect old value provided", true
			}
		}
	}
	return "", "", false
}

// isCASDetail reports whether detail is git's lost compare-and-swap, "is at <oid> but
// expected <oid>".
func isCASDetail(detail string) bool {
	at, ok := strings.CutPrefix(detail, "is at ")
	if !ok {
		return false
	}
	is, expected, ok := strings.Cut(at, " but expected ")
	return ok && isOID(is) && isOID(expected)
}

func isOID(s string) bool { return (len(s) == 40 || len(s) == 64) && isHex(s) }

// rewrite turns git's answer to a receive-pack POST (body, for the request q) into the
// forge's: each rejected ref's remote line that the forge folds into the reason is
// dropped and the reason replaced. Everything else keeps git's bytes; an answer with
// nothing to fold is returned as it came.
func (f Forge) rewrite(q request, body []byte) []byte {
	if f == ForgeGit || !q.reports() {
		return body
	}
	band := q.sideband()
	type event struct {
		raw    []byte // a packet sent again as it was (keep-alive, band 3, flush)
		line   string // a band-2 line, its "\n" included (the last may lack one)
		report bool   // the place of the report (the first band-1 data)
	}
	var (
		events  []event
		report  []byte
		partial string
		rest    []byte
	)
	if band == 0 {
		report = body
	} else {
		var pkts []pkt
		pkts, rest = readPkts(body)
		seenReport := false
		for _, p := range pkts {
			switch {
			case p.special >= 0:
				events = append(events, event{raw: appendSpecial(nil, p.special)})
			case len(p.data) > 1 && p.data[0] == bandData:
				report = append(report, p.data[1:]...)
				if !seenReport {
					events = append(events, event{report: true})
					seenReport = true
				}
			case len(p.data) > 0 && p.data[0] == bandMessage:
				partial += string(p.data[1:])
				for {
					i := strings.IndexByte(partial, '\n')
					if i < 0 {
						break
					}
					events = append(events, event{line: partial[:i+1]})
					partial = partial[i+1:]
				}
			default:
				events = append(events, event{raw: appendPkt(nil, p.data)})
			}
		}
		if partial != "" {
			// A message without its final newline: before the closing flush.
			at := len(events)
			if at > 0 && string(events[at-1].raw) == "0000" {
				at--
			}
			events = append(events[:at], append([]event{{line: partial}}, events[at:]...)...)
		}
	}

	rpkts, rrest := readPkts(report)
	var rejected []string
	for _, p := range rpkts {
		if ref, _, ok := ngLine(p); ok {
			rejected = append(rejected, ref)
		}
	}
	if len(rejected) == 0 {
		return body
	}
	reasons := map[string]string{}
	drop := make([]bool, len(events))
	for i, e := range events {
		text, whole := strings.CutSuffix(e.line, "\n")
		if !whole {
			continue
		}
		if ref, reason, ok := f.absorb(text, rejected); ok {
			drop[i] = true
			if _, seen := reasons[ref]; !seen {
				reasons[ref] = reason
			}
		}
	}
	if len(reasons) == 0 {
		return body
	}
	var newReport []byte
	for _, p := range rpkts {
		ref, _, ok := ngLine(p)
		switch {
		case p.special >= 0:
			newReport = appendSpecial(newReport, p.special)
		case ok && reasons[ref] != "":
			newReport = appendPkt(newReport, []byte("ng "+ref+" "+reasons[ref]+"\n"))
		default:
			newReport = appendPkt(newReport, p.data)
		}
	}
	newReport = append(newReport, rrest...)
	if band == 0 {
		return newReport
	}
	var out []byte
	for i, e := range events {
		switch {
		case drop[i]:
		case e.report:
			out = appendBand(out, bandData, newReport, band)
		case e.raw != nil:
			out = append(out, e.raw...)
		default:
			out = appendBand(out, bandMessage, []byte(e.line), band)
		}
	}
	return append(out, rest...)
}

// ngLine reads a report's "ng <ref> <reason>\n".
func ngLine(p pkt) (ref, reason string, ok bool) {
	if p.special >= 0 {
		return "", "", false
	}
	s, ok := strings.CutPrefix(string(p.data), "ng ")
	if !ok {
		return "", "", false
	}
	ref, reason, ok = strings.Cut(strings.TrimSuffix(s, "\n"), " ")
	return ref, reason, ok
}

// synthesize is an answer to q made without receive-pack: the messages (band 2), then
// a report in which the refs in reasons get theirs and every other ref gets other.
// Without a side band the messages are lost, as git's would be.
func synthesize(q request, lines []string, reasons map[string]string, other string) []byte {
	var report []byte
	if q.reports() {
		report = appendPkt(nil, []byte("unpack ok\n"))
		for _, c := range q.commands {
			reason := reasons[c.ref]
			if reason == "" {
				reason = other
			}
			report = appendPkt(report, []byte("ng "+c.ref+" "+reason+"\n"))
		}
		report = appendSpecial(report, 0)
	}
	band := q.sideband()
	if band == 0 {
		return report
	}
	return announce(q, lines, appendSpecial(appendBand(nil, bandData, report, band), 0))
}

// Refusal is a forge policy that refuses every update of one ref, the way a protected
// branch or a ruleset does: a receive-pack POST with a command for Ref is answered
// without applying anything (the pack is discarded), with Lines as remote messages and
// Reason as the porcelain reason of Ref. The push's other refs are refused with the
// same reason, as a declining pre-receive hook refuses every ref of a push. In Lines,
// "{repo}" stands for the repository's URL as the client addressed it, without a final
// ".git".
type Refusal struct {
	Ref    string
	Reason string
	Lines  []string
}

// GH006 is GitHub's protected branch refusal (transcribed): the rule listed after
// "error: ".
func GH006(ref string) Refusal {
	return Refusal{Ref: ref, Reason: "protected branch hook declined", Lines: []string{
		"error: GH006: Protected branch update failed for " + ref + ".",
		"error: Changes must be made through a pull request.",
	}}
}

// GH006List is the other form of GitHub's protected branch refusal that users
// reported (transcribed): an empty line, then the rule as a list item.
func GH006List(ref string) Refusal {
	return Refusal{Ref: ref, Reason: "protected branch hook declined", Lines: []string{
		"error: GH006: Protected branch update failed for " + ref + ".",
		"",
		"- Changes must be made through a pull request.",
	}}
}

// GH013 is GitHub's repository rules refusal (transcribed), with the rule that a
// change must come through a pull request, and the rules page of the repository.
func GH013(ref string) Refusal {
	return Refusal{Ref: ref, Reason: "push declined due to repository rule violations", Lines: []string{
		"error: GH013: Repository rule violations found for " + ref + ".",
		"Review all repository rules at {repo}/rules?ref=" + url.QueryEscape(ref),
		"",
		"- Changes must be made through a pull request.",
		"",
	}}
}

// GitLabProtected is GitLab's protected branch refusal (transcribed).
func GitLabProtected(ref string) Refusal {
	return Refusal{Ref: ref, Reason: "pre-receive hook declined", Lines: []string{
		"GitLab: You are not allowed to push code to protected branches on this project.",
	}}
}

// GitHubAppWorkflow is GitHub's refusal of a push that creates or changes the
// workflow file path (under .github/workflows) with a GitHub App's token that lacks
// the workflows permission (transcribed from
// https://github.com/repo-sync/github-sync/issues/23,
// https://github.com/peter-evans/create-pull-request/issues/1234 and
// https://github.com/cpp-linter/cpp-linter-action/issues/318): no remote line, the
// reason names the file.
func GitHubAppWorkflow(ref, path string) Refusal {
	return Refusal{Ref: ref, Reason: "refusing to allow a GitHub App to create or update workflow `" + path +
		"` without `workflows` permission"}
}

// Bypass is a forge rule that the pushing actor may bypass: a push that names Ref is
// answered as it would be without the rule (applied, refused, faulted or rewritten as
// the other options say), and the answer starts with Lines as remote messages.
type Bypass struct {
	Ref   string
	Lines []string
}

// GitHubBypass is what GitHub prints to an actor on the bypass list of a rule that
// changes to ref must come through a pull request (transcribed from
// https://github.com/akuity/kargo/issues/3071, where a lost compare-and-swap follows,
// and https://github.com/kernelkit/infix/issues/1610): the ref, then the rule as a list
// item between empty lines.
func GitHubBypass(ref string) Bypass {
	return Bypass{Ref: ref, Lines: []string{
		"Bypassed rule violations for " + ref + ":",
		"",
		"- Changes must be made through a pull request.",
		"",
	}}
}

// bypassed is the messages of the bypasses that apply to q's commands, each once, in
// the order of the commands.
func bypassed(bypasses []Bypass, q request) []string {
	var lines []string
	done := map[string]bool{}
	for _, c := range q.commands {
		for _, b := range bypasses {
			if b.Ref == c.ref && !done[c.ref] {
				done[c.ref] = true
				lines = append(lines, b.Lines...)
			}
		}
	}
	return lines
}

// announce puts lines before answer (an answer to q) as remote messages, on the side
// band q asked for; without one they are lost, as git's would be.
func announce(q request, lines []string, answer []byte) []byte {
	band := q.sideband()
	if band == 0 || len(lines) == 0 {
		return answer
	}
	var out []byte
	for _, l := range lines {
		out = appendBand(out, bandMessage, []byte(l+"\n"), band)
	}
	return append(out, answer...)
}

// refuse is the answer of the first refusal among q's commands, nil when none
// applies. repoURL replaces "{repo}" in the lines.
func refuse(refusals []Refusal, q request, repoURL string) []byte {
	var lines []string
	reasons := map[string]string{}
	other := ""
	for _, c := range q.commands {
		for _, r := range refusals {
			if r.Ref != c.ref || reasons[c.ref] != "" {
				continue
			}
			reasons[c.ref] = r.Reason
			if other == "" {
				other = r.Reason
			}
			for _, l := range r.Lines {
				lines = append(lines, strings.ReplaceAll(l, "{repo}", repoURL))
			}
		}
	}
	if other == "" {
		return nil
	}
	return synthesize(q, lines, reasons, other)
}

// Transcribed texts of GitHub's failures in the ref phase.
const (
	commitRefsLine        = "fatal error in commit_refs"
	commitRefsReason      = "failure"
	serverErrorLine       = "Internal Server Error"
	serverErrorReason     = "Internal Server Error"
	workflowTimeoutReason = "Unable to determine if workflow can be created or updated due to timeout; " +
		"`workflows` scope may be required."
)
