package main

import (
	"fmt"
	"strconv"
	"strings"
)

// resultCheck is what a trial's branch holds of the jobs' results.
type resultCheck struct {
	once   int // results present exactly once
	lost   int // results missing (or, in the files mode, a file with other content)
	dup    int // results present more than once
	okLost int // jobs that exited 0 but whose result is missing
	extra  int // lines of results.csv that are neither the header nor a job's line
}

// tally counts the results by how many times each job's result is on the
// branch (counts[i] for job i), and the jobs that exited 0 without theirs.
func tally(counts []int, exited0 []bool) resultCheck {
	var c resultCheck
	for i, k := range counts {
		switch {
		case k == 1:
			c.once++
		case k > 1:
			c.dup++
		default:
			c.lost++
			if i < len(exited0) && exited0[i] {
				c.okLost++
			}
		}
	}
	return c
}

// lineCounts counts how many times each wanted line is a whole line of csv,
// and the lines that are neither a wanted line nor the header.
func lineCounts(csv string, want []string) (counts []int, extra int) {
	index := make(map[string]int, len(want))
	for i, w := range want {
		index[w] = i
	}
	counts = make([]int, len(want))
	for l := range strings.Lines(csv) {
		l = strings.TrimSuffix(l, "\n")
		if i, ok := index[l]; ok {
			counts[i]++
		} else if l != matrixHeader {
			extra++
		}
	}
	return counts, extra
}

// catEntry is one object of `git cat-file --batch`'s output.
type catEntry struct {
	found   bool
	content string
}

// parseCatFileBatch reads the output of `git cat-file --batch` for want
// names: "<oid> <type> <size>\n<content>\n" for an object, "<name> missing\n"
// for one that is not there.
func parseCatFileBatch(out string, want int) ([]catEntry, error) {
	entries := make([]catEntry, 0, want)
	for len(entries) < want {
		header, rest, ok := strings.Cut(out, "\n")
		if !ok {
			return entries, fmt.Errorf("cat-file: %d of %d objects, then %q", len(entries), want, out)
		}
		if strings.HasSuffix(header, " missing") || strings.HasSuffix(header, " ambiguous") {
			entries = append(entries, catEntry{})
			out = rest
			continue
		}
		f := strings.Fields(header)
		if len(f) != 3 {
			return entries, fmt.Errorf("cat-file: unexpected header %q", header)
		}
		size, err := strconv.Atoi(f[2])
		if err != nil || size < 0 || size+1 > len(rest) || rest[size] != '\n' {
			return entries, fmt.Errorf("cat-file: object %q does not fit the output", header)
		}
		entries = append(entries, catEntry{found: true, content: rest[:size]})
		out = rest[size+1:]
	}
	if out != "" {
		return entries, fmt.Errorf("cat-file: %d bytes after the last object", len(out))
	}
	return entries, nil
}

// resultNames are the objects a trial reads, as `<rev>:<path>` names: the
// branch's results.csv once (shared modes) or every job's file (files mode),
// on main or, for a method that pushes each job to its own branch, on that
// branch.
func resultNames(mode matrixMode, ownBranch bool, jobs []matrixJob) []string {
	if mode.shared && !ownBranch {
		return []string{"refs/heads/main:results.csv"}
	}
	names := make([]string, len(jobs))
	for i, j := range jobs {
		branch := "refs/heads/main"
		if ownBranch {
			branch = "refs/heads/" + j.name
		}
		path := j.file()
		if mode.shared {
			path = "results.csv"
		}
		names[i] = branch + ":" + path
	}
	return names
}

// resultCounts turns what was read into how many times each job's result is
// there, and the extra lines of results.csv.
func resultCounts(mode matrixMode, ownBranch bool, jobs []matrixJob, entries []catEntry) ([]int, int) {
	counts := make([]int, len(jobs))
	switch {
	case mode.shared && !ownBranch:
		want := make([]string, len(jobs))
		for i, j := range jobs {
			want[i] = j.line()
		}
		return lineCounts(entries[0].content, want)
	case mode.shared:
		extra := 0
		for i, j := range jobs {
			c, e := lineCounts(entries[i].content, []string{j.line()})
			counts[i] = c[0]
			extra += e
		}
		return counts, extra
	default:
		for i, j := range jobs {
			if entries[i].found && entries[i].content == j.value+"\n" {
				counts[i] = 1
			}
		}
		return counts, 0
	}
}

// readResults reads the results from the trial's bare remote.
func readResults(r *runner, gitDir string, mode matrixMode, ownBranch bool, jobs []matrixJob) ([]int, int, error) {
	names := resultNames(mode, ownBranch, jobs)
	out, err := r.outputStdin(gitDir, strings.NewReader(strings.Join(names, "\n")+"\n"), r.git, "cat-file", "--batch")
	if err != nil {
		return nil, 0, err
	}
	entries, err := parseCatFileBatch(out, len(names))
	if err != nil {
		return nil, 0, err
	}
	counts, extra := resultCounts(mode, ownBranch, jobs, entries)
	return counts, extra, nil
}
