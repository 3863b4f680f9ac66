package ci

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStepSummaryTable: one header for consecutive rows, a new header after anything
// else was written, and concurrent appends never interleave.
func TestStepSummaryTable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "summary")
	s := Summary{Result: ResultSuccess, Attempts: 2, Elapsed: time.Second, Refs: []string{"refs/heads/a"}, Updates: 1}
	if err := appendStepSummary(path, "id-1", s); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := appendStepSummary(path, fmt.Sprintf("id-c%d", i), s); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("## The step's own heading\n")
	f.Close()
	if err := appendStepSummary(path, "id-2", s); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if got := strings.Count(string(data), summaryHeader); got != 2 {
		t.Errorf("%d headers, want 2:\n%s", got, data)
	}
	if len(lines) != 2+21+1+1+2+1 {
		t.Errorf("%d lines, want 28:\n%s", len(lines), data)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "| id") && strings.Count(l, " | ") != 4 {
			t.Errorf("row %q is not whole", l)
		}
	}
}

func TestStepSummaryCap(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "summary")
	big := bytes.Repeat([]byte("x"), maxStepSummary+1)
	if err := os.WriteFile(path, big, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := appendStepSummary(path, "id", Summary{Result: ResultSuccess, Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Size() != int64(len(big)) {
		t.Errorf("size %d: a full summary must not grow", fi.Size())
	}
}

// TestOutputsParse reads the output file back as the runner does.
func TestOutputsParse(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "output")
	want := []stepOutput{{"operation-id", "x"}, {"updated-refs", "refs/heads/a\nrefs/heads/b"}, {"empty", ""}}
	if err := writeOutputs(path, nil, want); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	got := parseOutputs(t, string(data))
	for _, o := range want {
		if got[o.Name] != o.Value {
			t.Errorf("%s = %q, want %q\n%s", o.Name, got[o.Name], o.Value, data)
		}
	}
}

func parseOutputs(t *testing.T, data string) map[string]string {
	t.Helper()
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(data))
	for sc.Scan() {
		name, delim, ok := strings.Cut(sc.Text(), "<<")
		if !ok {
			t.Fatalf("line %q is not name<<delimiter", sc.Text())
		}
		var value []string
		for sc.Scan() && sc.Text() != delim {
			value = append(value, sc.Text())
		}
		out[name] = strings.Join(value, "\n")
	}
	return out
}

// TestRelayWholeLines: git's stderr arrives in arbitrary pieces; each stop-commands
// window holds whole lines and the bytes come out unchanged.
func TestRelayWholeLines(t *testing.T) {
	t.Parallel()
	var w bytes.Buffer
	r := &stopCommandsRelay{w: &w, token: "TOK"}
	for _, piece := range []string{"fatal: a", "b\nerror: c\n", "d", "", "e"} {
		r.Write([]byte(piece))
	}
	r.Close()
	want := "::stop-commands::TOK\nfatal: ab\nerror: c\n::TOK::\n::stop-commands::TOK\nde\n::TOK::\n"
	if w.String() != want {
		t.Errorf("relayed %q, want %q", w.String(), want)
	}
	var g bytes.Buffer
	escRelay{&g}.Write([]byte("a\x1b[0Ksection_end:1:x\r\x1b[0K\n"))
	if g.String() != "a^[[0Ksection_end:1:x\r^[[0K\n" {
		t.Errorf("gitlab relay %q", g.String())
	}
}
