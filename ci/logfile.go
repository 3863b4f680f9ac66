package ci

import (
	"fmt"
	"os"
)

// OpenLogFile opens path for appending JSON lines, creating it if needed. With
// O_APPEND every write(2) lands at the end of the file as a whole, and the handlers
// here write each record with one Write (which os.File turns into one write(2) on a
// regular file), so any number of processes may append to the same file at once.
func OpenLogFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log file: %w", err)
	}
	return f, nil
}
