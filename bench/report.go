package main

import (
	"bufio"
	"cmp"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// machineSection describes the machine and the settings of this run.
func machineSection(r *runner, cfg config) string {
	var b strings.Builder
	b.WriteString("## Machine\n\n| item | value |\n|---|---|\n")
	row := func(k, v string) { fmt.Fprintf(&b, "| %s | %s |\n", k, cell(v)) }
	row("kernel (`uname -sr`)", commandLine(r, "uname", "-sr"))
	row("CPUs (`nproc`)", commandLine(r, "nproc"))
	row("CPU model", procField("/proc/cpuinfo", "model name"))
	row("memory (MemTotal)", memTotal())
	row("git under test", commandLine(r, cfg.git, "--version")+" (`"+cfg.git+"`)")
	row("git on PATH", pathGit(r))
	row("refretry", "`"+cfg.refretry+"`, REFRETRY_GIT="+cfg.git)
	if cfg.wants("fetch") {
		row("older git (fetch phase)", oldGitLine(r, cfg))
	}
	row("Go", runtime.Version())
	row("date", time.Now().UTC().Format(time.RFC3339))
	row("load average at the start (`/proc/loadavg`: 1, 5, 15 min)", loadAverages())
	variants := "all"
	if len(cfg.variants) > 0 {
		variants = cfg.variants.String()
	}
	only := "all"
	if cfg.only != "" {
		only = cfg.only
	}
	row("settings", fmt.Sprintf("phases=%s trials=%d writers=%s batches=%s single-runs=%d member-runs=%d fetchers=%s timeout=%v variants=%s",
		only, cfg.trials, cfg.writers.String(), cfg.batches.String(), cfg.singleRuns, cfg.memberRuns, cfg.fetchers.String(), cfg.timeout, variants))
	if cfg.wants("matrix") {
		m := cfg.matrix
		row("matrix settings", fmt.Sprintf("jobs=%s modes=%s methods=%s servers=%s checkout=%s trials=%d refretry --timeout %v, job timeout %v",
			m.jobs.String(), m.modes.String(), m.methods.String(), m.servers.String(), m.checkout, cfg.trialsOfMatrix(), m.pushTimeout, m.jobTimeout))
	}
	for _, e := range cfg.extras {
		row("single-update extra", e.label+": `"+e.path+"`")
	}
	for _, e := range cfg.rrExtras {
		row("concurrency extra", e.label+": `"+e.path+"`")
	}
	b.WriteString("\n")
	return b.String()
}

// loadAverages are the 1, 5 and 15 minute load averages.
func loadAverages() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], ", ")
}

// commandLine returns the first output line of a command, or the error.
func commandLine(r *runner, argv ...string) string {
	out, err := r.output("", argv...)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return firstLine(out)
}

// oldGitLine describes the fetch phase's older git, or why it is skipped.
func oldGitLine(r *runner, cfg config) string {
	if cfg.oldGitSkip != "" {
		return "none: " + cfg.oldGitSkip
	}
	return commandLine(r, cfg.oldGit, "--version") + " (`" + cfg.oldGit + "`)"
}

func pathGit(r *runner) string {
	p, err := exec.LookPath("git")
	if err != nil {
		return "none (" + err.Error() + ")"
	}
	return commandLine(r, p, "--version") + " (`" + p + "`)"
}

// procField returns the value of the first "key : value" line in a /proc
// file.
func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	defer f.Close() // read-only; a close error cannot lose data
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	if err := sc.Err(); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return "unknown"
}

func memTotal() string {
	v := procField("/proc/meminfo", "MemTotal")
	fields := strings.Fields(v)
	if len(fields) != 2 || fields[1] != "kB" {
		return v
	}
	kib, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return v
	}
	return fmt.Sprintf("%.1f GiB (%s)", float64(kib)/(1<<20), v)
}

// median returns the middle value (mean of the two middle values for an
// even count); zero for no values.
func median[T ~int | ~int64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return s[mid]
	}
	return s[mid-1] + (s[mid]-s[mid-1])/2
}

// medianFloat is the median of counts as a float (the mean of the two
// middle values for an even count); 0 for none.
func medianFloat(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	mid := len(s) / 2
	if len(s)%2 == 1 {
		return float64(s[mid])
	}
	return float64(s[mid-1]+s[mid]) / 2
}

// medianText formats the median of counts, with a half when the two
// middle values of an even count differ by an odd amount.
func medianText(xs []int) string {
	if len(xs) == 0 {
		return "n/a"
	}
	s := slices.Sorted(slices.Values(xs))
	mid := len(s) / 2
	if len(s)%2 == 1 || (s[mid-1]+s[mid])%2 == 0 {
		return strconv.Itoa(median(s))
	}
	return strconv.FormatFloat(float64(s[mid-1]+s[mid])/2, 'f', 1, 64)
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100).
func percentile[T cmp.Ordered](xs []T, p float64) T {
	var zero T
	if len(xs) == 0 {
		return zero
	}
	s := slices.Sorted(slices.Values(xs))
	rank := int(math.Ceil(float64(len(s))*p/100)) - 1
	return s[max(0, min(rank, len(s)-1))]
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func millis(d time.Duration) string {
	return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond))
}

func mib(kib int64) string {
	if kib == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f", float64(kib)/1024)
}

// ratio formats a/b as a multiplier.
func ratio(a, b time.Duration) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", float64(a)/float64(b))
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// cell makes text safe inside a markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
