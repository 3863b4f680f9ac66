package ci

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestLogFileConcurrent: many operations appending to one file at once, each through
// its own descriptor, leave only whole JSON lines. (main_test.go does the same with
// 300 refretry processes.)
func TestLogFileConcurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "log.jsonl")
	const ops = 50
	long := strings.Repeat("x", 400)
	var wg sync.WaitGroup
	for range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := OpenLogFile(path)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			op, err := New(Config{Command: "update-ref", LogFile: f})
			if err != nil {
				t.Error(err)
				return
			}
			for n := 1; n <= 5; n++ {
				op.Attempt(context.Background(), Attempt{Number: n, ExitCode: 128, Class: "lock-contention", Error: long, Final: n == 5})
			}
			op.Finish(context.Background(), Summary{Result: ResultGaveUp, Attempts: 5, Error: long, Updates: -1})
		}()
	}
	wg.Wait()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	summaries := map[string]int{}
	lines := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines++
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("line %d is not JSON: %v: %q", lines, err, sc.Text())
		}
		if rec["msg"] == msgSummary {
			summaries[rec[keyOperationID].(string)]++
		}
	}
	if lines != ops*6 || len(summaries) != ops {
		t.Errorf("%d lines and %d operations with a summary, want %d and %d", lines, len(summaries), ops*6, ops)
	}
}
