package main

import (
	"regexp"
	"strings"
)

// failureClass is why one fetch failed, judged from its standard error.
type failureClass int

const (
	// classStale: another fetch moved the ref between this one reading it
	// and locking it (both backends).
	classStale failureClass = iota
	// classLockExists: another fetch held the ref's lock file (files).
	classLockExists
	// classRefsLocked: the whole reftable stack was locked by another
	// writer for longer than git waits (reftable).
	classRefsLocked
	// classLockOther: "cannot lock ref" for any other reason.
	classLockOther
	// classOther: none of the above; the report quotes the line.
	classOther
	numClasses
)

// failureClasses name the classes in report order (failureClass values)
// and match the line that decides each. The patterns are for counting in
// a report, not for deciding anything: the "File exists" one is tried
// before the general "cannot lock ref" one that contains it.
var failureClasses = [numClasses]struct {
	name string
	re   *regexp.Regexp
}{
	classStale:      {"is at … but expected", regexp.MustCompile(`cannot lock ref '[^']+': is at [0-9a-f]+ but expected [0-9a-f]+`)},
	classLockExists: {"Unable to create … File exists", regexp.MustCompile(`Unable to create '[^']+\.lock': File exists`)},
	classRefsLocked: {"cannot lock references", regexp.MustCompile(`cannot lock references$`)},
	classLockOther:  {"cannot lock ref, other", regexp.MustCompile(`cannot lock ref '[^']+': `)},
	classOther:      {"other", nil},
}

// classify returns the class of a failed fetch and the line that decided
// it: the first line of stderr that matches a class or starts with
// "error:" or "fatal:" (so "From <url>" and the per-ref summary lines do
// not count). With no such line the class is classOther and the line is
// fallback (the exit status), followed by the first line of stderr if
// there was one.
func classify(stderr, fallback string) (failureClass, string) {
	first := ""
	for line := range strings.Lines(stderr) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if first == "" {
			first = line
		}
		for c, fc := range failureClasses {
			if fc.re != nil && fc.re.MatchString(line) {
				return failureClass(c), line
			}
		}
		if strings.HasPrefix(line, "error:") || strings.HasPrefix(line, "fatal:") {
			return classOther, line
		}
	}
	if first == "" {
		return classOther, fallback
	}
	return classOther, fallback + "; stderr begins: " + first
}
