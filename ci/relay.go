package ci

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// stderrRelay is where git's own stderr goes in a given format. Close writes out
// whatever is held back; it does not close the underlying writer.
type stderrRelay interface {
	io.Writer
	Close() error
}

type passRelay struct{ io.Writer }

func (passRelay) Close() error { return nil }

// stopCommandsRelay passes git's stderr to a GitHub step's log inside
// "::stop-commands::<token>" … "::<token>::", so that nothing git prints (a ref name
// in a message, say) is read as a workflow command. It writes whole lines only, each
// batch in its own stop/resume pair with one Write, and holds back a partial last line
// until more comes or Close. The window is kept this short because stopping commands
// affects the whole step, other processes' output included.
type stopCommandsRelay struct {
	mu    sync.Mutex
	w     io.Writer
	token string
	held  []byte
}

func (r *stopCommandsRelay) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.held = append(r.held, p...)
	i := bytes.LastIndexByte(r.held, '\n')
	if i < 0 {
		return len(p), nil
	}
	if err := r.emit(r.held[:i+1]); err != nil {
		return 0, err
	}
	r.held = append(r.held[:0], r.held[i+1:]...)
	return len(p), nil
}

func (r *stopCommandsRelay) emit(lines []byte) error {
	var b bytes.Buffer
	b.WriteString("::stop-commands::" + r.token + "\n")
	b.Write(lines)
	b.WriteString("::" + r.token + "::\n")
	if _, err := r.w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("relaying git's stderr: %w", err)
	}
	return nil
}

// Close writes a held-back partial line, ending it with a newline so that the resume
// command starts a line of its own.
func (r *stopCommandsRelay) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.held) == 0 {
		return nil
	}
	err := r.emit(append(r.held, '\n'))
	r.held = nil
	return err
}

// escRelay passes git's stderr to a GitLab job log with each ESC byte shown as "^[",
// so that git's output cannot open or close a section.
type escRelay struct{ w io.Writer }

func (r escRelay) Write(p []byte) (int, error) {
	if bytes.IndexByte(p, 0x1b) < 0 {
		return r.w.Write(p)
	}
	if _, err := r.w.Write(bytes.ReplaceAll(p, []byte{0x1b}, []byte("^["))); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (escRelay) Close() error { return nil }
