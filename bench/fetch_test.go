package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestClassifyCaptured feeds the captured stderr of real failed fetches
// (testdata/fetch-stderr, named <git version>-<backend>-<class>.txt) to
// classify.
func TestClassifyCaptured(t *testing.T) {
	want := map[string]failureClass{"stale": classStale, "lockexists": classLockExists, "refslocked": classRefsLocked}
	files, err := filepath.Glob(filepath.Join("testdata", "fetch-stderr", "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no captured stderr found")
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txt")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			class, ok := want[name[strings.LastIndex(name, "-")+1:]]
			if !ok {
				t.Fatalf("file name %q names no known class", name)
			}
			got, line := classify(string(data), "exit status 1")
			if got != class {
				t.Errorf("class %s, want %s (deciding line %q)", failureClasses[got].name, failureClasses[class].name, line)
			}
			if !strings.HasPrefix(line, "error: ") {
				t.Errorf("deciding line %q is not git's first error line", line)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, stderr string
		class        failureClass
		line         string
	}{
		{"other ref lock", "From /r\nerror: cannot lock ref 'refs/remotes/origin/b1': reference already exists\n",
			classLockOther, "error: cannot lock ref 'refs/remotes/origin/b1': reference already exists"},
		{"first error decides", "From /r\nfatal: unable to access 'http://127.0.0.1:1/r.git/': Connection refused\n" +
			"error: cannot lock ref 'refs/remotes/origin/b1': is at 1234567 but expected 89abcde\n",
			classOther, "fatal: unable to access 'http://127.0.0.1:1/r.git/': Connection refused"},
		{"warnings do not decide", "warning: redirecting to http://127.0.0.1:2/r.git/\nerror: cannot lock references\n",
			classRefsLocked, "error: cannot lock references"},
		{"no error line", "From /r\n", classOther, "exit status 1; stderr begins: From /r"},
		{"empty", "", classOther, "exit status 1"},
	}
	for _, c := range cases {
		class, line := classify(c.stderr, "exit status 1")
		if class != c.class || line != c.line {
			t.Errorf("%s: got %s, %q; want %s, %q", c.name, failureClasses[class].name, line, failureClasses[c.class].name, c.line)
		}
	}
}

func TestKnowsRefFormat(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{
		"2.39.5": false, "2.44.0": false, "2.45.0": true, "2.55.0": true, "3.0.0": true,
		"2.45.0.windows.1": true, "unknown": false, "": false,
	} {
		if got := knowsRefFormat(v); got != want {
			t.Errorf("knowsRefFormat(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestBranchStream checks the fast-import input: one commit per branch,
// each data block as long as it says, parents only when asked for.
func TestBranchStream(t *testing.T) {
	t.Parallel()
	for _, onTip := range []bool{false, true} {
		s := branchStream("new", onTip)
		commits, froms := 0, 0
		for rest := s; rest != ""; {
			line, tail, _ := strings.Cut(rest, "\n")
			rest = tail
			switch {
			case strings.HasPrefix(line, "commit refs/heads/b"):
				commits++
			case strings.HasPrefix(line, "from refs/heads/b"):
				froms++
			case strings.HasPrefix(line, "data "):
				var n int
				if _, err := fmt.Sscanf(line, "data %d", &n); err != nil || n > len(rest) || rest[n-1] != '\n' {
					t.Fatalf("bad data block %q before %q", line, rest[:min(len(rest), 20)])
				}
				rest = rest[n:]
			}
		}
		wantFroms := 0
		if onTip {
			wantFroms = fetchBranches
		}
		if commits != fetchBranches || froms != wantFroms {
			t.Errorf("onTip=%v: %d commits, %d parents; want %d, %d", onTip, commits, froms, fetchBranches, wantFroms)
		}
	}
}

func TestFetchFlags(t *testing.T) {
	t.Parallel()
	base := []string{"-git", "/bin/sh", "-refretry", "/bin/sh"}
	cfg, err := parseFlags(append(base, "-only", "fetch", "-fetchers", "3,5", "-old-git", "/nonexistent/git"), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.wants("fetch") || cfg.wants("concurrency") || cfg.fetchers.String() != "3,5" {
		t.Errorf("-only fetch -fetchers 3,5: only %q, fetchers %v", cfg.only, cfg.fetchers)
	}
	if !strings.Contains(cfg.oldGitSkip, "/nonexistent/git") {
		t.Errorf("a missing -old-git should be skipped with the reason, got %q", cfg.oldGitSkip)
	}
	if cfg, err := parseFlags(append(base, "-old-git", "/bin/sh"), io.Discard); err != nil || cfg.oldGitSkip != "" || cfg.oldGit != "/bin/sh" {
		t.Errorf("-old-git /bin/sh: %q, skip %q, err %v", cfg.oldGit, cfg.oldGitSkip, err)
	}
	if quick, err := parseFlags(append(base, "-quick"), io.Discard); err != nil || quick.fetchers.String() != "2" {
		t.Errorf("-quick: fetchers %v, err %v", quick.fetchers, err)
	}
}

// TestRenderFetch checks that every row of the fetch tables has as many
// cells as its header, skipped rows included, and that failures are
// quoted under the table.
func TestRenderFetch(t *testing.T) {
	t.Parallel()
	file := fetchTransport{name: "file", label: "file://"}
	ran := fetchCombo{name: "files-git", format: "files", label: "files, git 2.55.0"}
	skipped := fetchCombo{name: "files-old-git", format: "files", label: "files, older git", skip: "-old-git x: not found | gone"}
	cells := []fetchCell{{combo: ran, transport: file, fx: &fetchFixture{}}, {combo: skipped, transport: file}}
	failed := fetchResult{trialResult: trialResult{ok: 1, failed: 3, firstErr: "error: cannot lock ref 'refs/remotes/origin/b0': is at 1 but expected 2"}}
	failed.classes[classStale] = 3
	results := [][][]fetchResult{
		{{failed, failed}, {{trialResult: trialResult{ok: 4}}, {trialResult: trialResult{ok: 4}}}},
		{nil, nil},
	}
	var b strings.Builder
	sums := renderFetch(&b, 4, cells, results)
	if sums[0][fetchGit] == nil || sums[1][fetchGit] != nil {
		t.Errorf("summaries: ran %v, skipped %v", sums[0][fetchGit], sums[1][fetchGit])
	}
	out := b.String()
	width := -1
	rows := 0
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "|") {
			width = -1 // a new table starts after a non-table line
			continue
		}
		cells := strings.Count(strings.ReplaceAll(line, `\|`, ""), "|")
		if width < 0 {
			width = cells
			continue
		}
		rows++
		if cells != width {
			t.Errorf("row has %d separators, header %d: %s", cells, width, line)
		}
	}
	if rows != 3+1+1+1 { // separator, 2 variants, skipped row; ratio separator and row
		t.Errorf("%d table rows after headers, want 6:\n%s", rows, out)
	}
	if !strings.Contains(out, "files, git 2.55.0, git: `error: cannot lock ref") {
		t.Errorf("first failure not quoted:\n%s", out)
	}
}
