package ci

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/platform"
)

// maxStepSummary is the size past which appendStepSummary adds nothing: GitHub refuses
// a step summary over 1 MiB, and the step's own content should keep the room.
const maxStepSummary = 256 << 10

const (
	summaryHeader = "| refretry operation | result | attempts | elapsed | refs |"
	summaryRule   = "|---|---|---|---|---|"
	summaryRefs   = 3 // refs named in a row
)

// appendStepSummary appends one row describing an operation to the GitHub step
// summary file at path, preceded by the table's header unless the file already ends
// with refretry's table. Concurrent refretry processes take turns (flock), so rows and
// headers are never interleaved.
func appendStepSummary(path, id string, s Summary) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	defer f.Close()
	if err := platform.Lock(f, true); err != nil && !errors.Is(err, platform.ErrUnsupported) {
		return fmt.Errorf("step summary: locking: %w", err)
	}
	defer platform.Unlock(f)
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	if fi.Size() > maxStepSummary {
		return nil
	}
	var b strings.Builder
	if !endsWithTable(f, fi.Size()) {
		if fi.Size() > 0 {
			b.WriteString("\n")
		}
		b.WriteString(summaryHeader + "\n" + summaryRule + "\n")
	}
	b.WriteString(summaryRow(id, s) + "\n")
	if _, err := f.WriteString(b.String()); err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	return nil
}

// endsWithTable reports whether the file's last lines are refretry's table: its header
// and rule followed only by rows.
func endsWithTable(f *os.File, size int64) bool {
	const window = 64 << 10
	off := max(size-window, 0)
	buf := make([]byte, size-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return false
	}
	lines := strings.Split(strings.TrimSuffix(string(buf), "\n"), "\n")
	for i := len(lines) - 1; i >= 1; i-- {
		switch {
		case lines[i] == summaryRule:
			return lines[i-1] == summaryHeader
		case strings.HasPrefix(lines[i], "| ") && strings.HasSuffix(lines[i], " |") && lines[i] != summaryHeader:
			continue
		default:
			return false
		}
	}
	return false
}

// summaryRow is one markdown table row; every value from outside is escaped.
func summaryRow(id string, s Summary) string {
	refs := s.Refs
	more := s.RefsTruncated
	if len(refs) > summaryRefs {
		refs, more = refs[:summaryRefs], true
	}
	cells := make([]string, len(refs))
	for i, r := range refs {
		cells[i] = markdownText(bound(r, 100))
	}
	list := strings.Join(cells, ", ")
	if more {
		list += ", …"
	}
	if s.Updates > len(s.Refs) && !more {
		list += fmt.Sprintf(" (%d updates)", s.Updates)
	}
	return fmt.Sprintf("| %s | %s | %d | %v | %s |", markdownText(id), markdownText(string(s.Result)),
		s.Attempts, s.Elapsed.Round(time.Millisecond), list)
}

// markdownText escapes every ASCII punctuation character with a backslash (which
// CommonMark allows for all of them, and GitHub's tables need for '|'), and shows
// control characters as escapes, so text from outside renders as itself.
func markdownText(s string) string {
	s = printable(s)
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && strings.ContainsRune("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
