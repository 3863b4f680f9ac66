package transaction

import (
	"fmt"
	"io"
	"os"
)

// defaultSpoolMemory is how many bytes a [spool] keeps in memory before it moves its
// contents to a temporary file.
const defaultSpoolMemory = 4 << 20

// spool holds bytes written once and read back any number of times: in memory while
// small, in an unlinked-on-Close temporary file beyond its memory limit, so that a
// million-update batch does not cost its size in RAM.
type spool struct {
	limit int
	dir   string
	mem   []byte
	file  *os.File
	size  int64
}

// newSpool returns a spool that keeps up to limit bytes in memory (defaultSpoolMemory
// when limit <= 0) and spills to a file in dir (os.TempDir() when empty).
func newSpool(limit int, dir string) *spool {
	if limit <= 0 {
		limit = defaultSpoolMemory
	}
	return &spool{limit: limit, dir: dir}
}

// Write appends p.
func (s *spool) Write(p []byte) (int, error) {
	if s.file == nil && len(s.mem)+len(p) > s.limit {
		f, err := os.CreateTemp(s.dir, "refretry-spool-*")
		if err != nil {
			return 0, fmt.Errorf("spooling input: %w", err)
		}
		// The file is only ever reached through f: remove its name at once so that
		// nothing is left behind however the process ends.
		_ = os.Remove(f.Name())
		if _, err := f.Write(s.mem); err != nil {
			f.Close()
			return 0, fmt.Errorf("spooling input: %w", err)
		}
		s.file, s.mem = f, nil
	}
	if s.file != nil {
		n, err := s.file.WriteAt(p, s.size)
		s.size += int64(n)
		if err != nil {
			return n, fmt.Errorf("spooling input: %w", err)
		}
		return n, nil
	}
	s.mem = append(s.mem, p...)
	s.size += int64(len(p))
	return len(p), nil
}

// Len is the number of bytes written so far.
func (s *spool) Len() int64 { return s.size }

// Spilled reports whether the contents live in a file.
func (s *spool) Spilled() bool { return s.file != nil }

// ReaderFrom returns a reader of the bytes from off to the current end.
func (s *spool) ReaderFrom(off int64) io.Reader {
	if off > s.size {
		off = s.size
	}
	if s.file != nil {
		return io.NewSectionReader(s.file, off, s.size-off)
	}
	return &memReader{b: s.mem[off:s.size]}
}

// WriteTo copies the whole contents to w.
func (s *spool) WriteTo(w io.Writer) (int64, error) {
	return io.Copy(w, s.ReaderFrom(0))
}

// Tail returns up to n bytes from the end of the contents.
func (s *spool) Tail(n int) []byte {
	off := s.size - int64(n)
	if off < 0 {
		off = 0
	}
	b, _ := io.ReadAll(s.ReaderFrom(off))
	return b
}

// Close releases the temporary file, if any.
func (s *spool) Close() error {
	if s.file == nil {
		return nil
	}
	err := s.file.Close()
	s.file = nil
	return err
}

type memReader struct{ b []byte }

func (r *memReader) Read(p []byte) (int, error) {
	if len(r.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}
