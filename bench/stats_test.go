package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	cases := []struct {
		in   []int
		want int
	}{
		{nil, 0},
		{[]int{3}, 3},
		{[]int{5, 1, 3}, 3},
		{[]int{4, 1, 3, 2}, 2},
	}
	for _, c := range cases {
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %d, want %d", c.in, got, c.want)
		}
	}
	if got := median([]time.Duration{time.Second, 3 * time.Second}); got != 2*time.Second {
		t.Errorf("median of durations = %v, want 2s", got)
	}
}

func TestMedianText(t *testing.T) {
	for in, want := range map[string]string{"": "n/a", "7": "7", "19,20": "19.5", "18,20": "19", "1,2,9": "2"} {
		var xs []int
		if in != "" {
			var l intList
			if err := l.Set(in); err != nil {
				t.Fatal(err)
			}
			xs = l
		}
		if got := medianText(xs); got != want {
			t.Errorf("medianText(%v) = %q, want %q", xs, got, want)
		}
	}
}

func TestPercentile(t *testing.T) {
	xs := make([]int, 0, 100)
	for i := 100; i >= 1; i-- {
		xs = append(xs, i)
	}
	if got := percentile(xs, 90); got != 90 {
		t.Errorf("p90 = %d, want 90", got)
	}
	if got := percentile(xs, 100); got != 100 {
		t.Errorf("p100 = %d, want 100", got)
	}
	if got := percentile([]int{7}, 90); got != 7 {
		t.Errorf("p90 of one = %d, want 7", got)
	}
}

func TestIntListRejectsBadInput(t *testing.T) {
	for _, in := range []string{"", "1,,2", "0", "-3", "x"} {
		var l intList
		if err := l.Set(in); err == nil {
			t.Errorf("Set(%q) succeeded with %v", in, l)
		}
	}
}

func TestChildEnvIsolates(t *testing.T) {
	base := []string{"PATH=/bin", "GIT_DIR=/elsewhere", "HOME=/root", gateEnv + "=1", "LC_ALL=de_DE"}
	env := childEnv(base, "/tmp/h", "/opt/git")
	for _, kv := range env {
		if strings.HasPrefix(kv, "GIT_DIR=") || strings.HasPrefix(kv, gateEnv+"=") {
			t.Errorf("leaked %q", kv)
		}
	}
	for _, want := range []string{"PATH=/bin", "HOME=/tmp/h", "LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "REFRETRY_GIT=/opt/git"} {
		if !slices.Contains(env, want) {
			t.Errorf("missing %q in %v", want, env)
		}
	}
}

func TestReadHWM(t *testing.T) {
	path := t.TempDir() + "/status"
	if _, ok := readHWM(path); ok {
		t.Error("readHWM of a missing file reported a value")
	}
	if err := os.WriteFile(path, []byte("Name:\tx\nVmPeak:\t  9 kB\nVmHWM:\t   1234 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, ok := readHWM(path); !ok || v != 1234 {
		t.Errorf("readHWM = %d, %v; want 1234, true", v, ok)
	}
}

// TestWithGit checks that a runner for another git points refretry at it
// and leaves the original alone.
func TestWithGit(t *testing.T) {
	r := &runner{git: "/opt/new/git", env: childEnv([]string{"PATH=/bin"}, "/tmp/h", "/opt/new/git")}
	old := r.withGit("/usr/bin/git")
	if old.git != "/usr/bin/git" || r.git != "/opt/new/git" {
		t.Errorf("git: derived %q, original %q", old.git, r.git)
	}
	last := func(env []string) string {
		v := ""
		for _, kv := range env {
			if s, ok := strings.CutPrefix(kv, "REFRETRY_GIT="); ok {
				v = s
			}
		}
		return v
	}
	if got := last(old.env); got != "/usr/bin/git" {
		t.Errorf("derived runner's REFRETRY_GIT = %q", got)
	}
	if got := last(r.env); got != "/opt/new/git" {
		t.Errorf("original runner's REFRETRY_GIT = %q", got)
	}
}
