package ci

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// hostile strings a ref name, a lock path or git's stderr may carry.
var hostile = []string{
	"refs/heads/%0A::error::pwned",
	"refs/heads/a\n::error title=x::injected",
	"refs/heads/b\r::warning::injected",
	"::endgroup::",
	"::stop-commands::anything",
	"::add-mask::secret",
	"::set-output name=result::success",
	"text ##[error]legacy form ##[group]x",
	"%25%0A%3A%2C",
	"\x1b[0Ksection_end:1:refretry_x\r\x1b[0K",
	"\x1b[0Ksection_start:1:fake[collapsed=true]\r\x1b[0Kfake",
	"line\u2028separator",
}

// hostilePlay runs one failed operation where every variable field holds s, with s
// also as git's stderr, and returns stderr.
func hostilePlay(t *testing.T, f Format, s string) string {
	t.Helper()
	var stderr bytes.Buffer
	op, err := New(Config{Command: "update-ref", Format: f, Stderr: &stderr, ID: fixedID, Random: &counting{},
		Now: func() time.Time { return fixedTime }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	op.Attempt(ctx, Attempt{Number: 1, ExitCode: 128, Class: "lock-contention", Error: s, Lock: s, Delay: time.Millisecond})
	op.Attempt(ctx, Attempt{Number: 2, ExitCode: 128, Class: "other", Error: s, Final: true})
	op.Relay().Write([]byte("fatal: " + s + "\nerror: " + s))
	op.Finish(ctx, Summary{Result: ResultFailed, ExitCode: 128, Attempts: 2, Class: "other", Error: s,
		Lock: s, Refs: []string{s}, Updates: 1, Advice: s})
	return stderr.String()
}

// TestInjectionGitHub: outside the stop-commands window, every line that the runner
// would read as a command is one refretry meant, and git's stderr is inside the window
// with a token it does not contain.
func TestInjectionGitHub(t *testing.T) {
	t.Parallel()
	for _, s := range hostile {
		out := hostilePlay(t, formatGitHub, s)
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		token := ""
		var commands []string
		for _, l := range lines {
			if token != "" {
				if l == "::"+token+"::" {
					token = ""
				}
				continue
			}
			if tok, ok := strings.CutPrefix(l, "::stop-commands::"); ok {
				if strings.Contains(s, tok) {
					t.Errorf("%q: the token %q occurs in git's output", s, tok)
				}
				token = tok
				continue
			}
			if strings.Contains(l, "##[") && !strings.Contains(l, `##\[`) {
				t.Errorf("%q: line %q carries a legacy command", s, l)
			}
			if strings.HasPrefix(strings.TrimSpace(l), "::") {
				name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(l), "::"), "::")
				name, _, _ = strings.Cut(name, " ")
				commands = append(commands, name)
			} else if !strings.HasPrefix(l, "attempt ") {
				t.Errorf("%q: unexpected plain line %q", s, l)
			}
		}
		if token != "" {
			t.Errorf("%q: commands never resumed", s)
		}
		if got := strings.Join(commands, " "); got != "group endgroup error" {
			t.Errorf("%q: commands %q, want group endgroup error\n%s", s, got, out)
		}
		// The annotation's data decodes to text that still holds s whole.
		for _, l := range lines {
			if data, ok := strings.CutPrefix(l, "::error title=refretry%3A update-ref failed::"); ok {
				if !strings.Contains(unescape(data, false), strings.ReplaceAll(s, "##[", `##\[`)) {
					t.Errorf("%q: annotation %q lost the text", s, data)
				}
			}
		}
	}
}

// TestInjectionGitLab: only refretry's own section markers carry ESC; no line of git's
// or refretry's can open or close a section.
func TestInjectionGitLab(t *testing.T) {
	t.Parallel()
	for _, s := range hostile {
		out := hostilePlay(t, formatGitLab, s)
		if n := strings.Count(out, "\x1b"); n != 4 {
			t.Errorf("%q: %d ESC bytes, want 4 (the two markers of one section)\n%q", s, n, out)
		}
		if n := strings.Count(out, "\x1b[0Ksection_start:"); n != 1 {
			t.Errorf("%q: %d section starts\n%q", s, n, out)
		}
		if !strings.Contains(out, "\x1b[0Ksection_end:1796040000:refretry_01930000000070008000000000000001\r\x1b[0K\n") {
			t.Errorf("%q: no end marker for the operation's section\n%q", s, out)
		}
	}
}

// TestInjectionText: each record is whole lines starting with "refretry: ", whatever
// the fields hold.
func TestInjectionText(t *testing.T) {
	t.Parallel()
	for _, s := range hostile {
		var stderr bytes.Buffer
		op, err := New(Config{Command: "update-ref", Format: formatText, Stderr: &stderr, ID: fixedID})
		if err != nil {
			t.Fatal(err)
		}
		op.Attempt(context.Background(), Attempt{Number: 1, ExitCode: 128, Class: "lock-contention", Lock: s, Delay: time.Millisecond})
		op.Finish(context.Background(), Summary{Result: ResultFailed, Attempts: 1, Class: "other", Error: s, Advice: s})
		for _, l := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
			if !strings.HasPrefix(l, "refretry: ") || strings.ContainsAny(l, "\r\x1b\u2028") {
				t.Errorf("%q: line %q", s, l)
			}
		}
	}
}

// TestInjectionStepFiles: hostile refs stay inside their table cell and output value.
func TestInjectionStepFiles(t *testing.T) {
	t.Parallel()
	row := summaryRow(fixedID, Summary{Result: ResultSuccess, Attempts: 1, Refs: []string{"a|b", "<script>", "x\ny"}})
	if strings.Count(row, "|")-strings.Count(row, `\|`) != 6 || strings.Contains(row, "\n") || strings.Contains(strings.ReplaceAll(row, `\<`, ""), "<") {
		t.Errorf("row %q: a ref escaped its cell", row)
	}
	delim, err := delimiter(&counting{}, stepOutput{Name: "updated-refs", Value: "REFRETRY_EOF_000102030405060708090a0b0c0d0e0f"})
	if err != nil {
		t.Fatal(err)
	}
	if delim == "REFRETRY_EOF_000102030405060708090a0b0c0d0e0f" {
		t.Errorf("delimiter %q occurs in the value", delim)
	}
}
