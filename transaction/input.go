package transaction

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
)

// control is the kind of a transaction-control command in update-ref's input.
type control int

const (
	notControl control = iota // update, create, delete, verify, symref-*, option, or unknown
	ctlStart
	ctlPrepare
	ctlCommit
	ctlAbort
)

// commandArgs is update-ref's command table: the name of each command and how many
// arguments it takes (in -z mode, the fields after the first that belong to it).
var commandArgs = []struct {
	name string
	args int
}{
	{"update", 3}, {"create", 2}, {"delete", 2}, {"verify", 2},
	{"symref-update", 4}, {"symref-create", 2}, {"symref-delete", 2}, {"symref-verify", 2},
	{"option", 1},
	{"start", 0}, {"prepare", 0}, {"abort", 0}, {"commit", 0},
}

// reader splits update-ref --stdin input into commands exactly as git frames them,
// without interpreting their arguments: each command comes back as the raw bytes git
// will read for it, terminators included. Bytes git would reject are returned as they
// are, and git reports the error.
type reader struct {
	r   *bufio.Reader
	nul bool
}

// newReader reads commands from r; nul selects -z framing.
func newReader(r io.Reader, nul bool) *reader {
	return &reader{r: bufio.NewReaderSize(r, 64<<10), nul: nul}
}

// Next appends the next command to buf and returns it with its kind. At the end of the
// input it returns io.EOF, together with any final unterminated bytes.
func (r *reader) Next(buf []byte) ([]byte, control, error) {
	term := byte('\n')
	if r.nul {
		term = 0
	}
	start := len(buf)
	buf, err := r.field(buf, term)
	if err != nil {
		return buf, notControl, err
	}
	first := buf[start:]
	args, ctl := identify(first, term)
	for j := 1; r.nul && j < args; j++ {
		if buf, err = r.field(buf, term); err != nil {
			return buf, ctl, err
		}
	}
	return buf, ctl, nil
}

// Buffered is how many bytes of input have been read ahead and not yet returned: when
// it is 0, the next call to Next may block waiting for the caller.
func (r *reader) Buffered() int { return r.r.Buffered() }

// field appends bytes up to and including the next term.
func (r *reader) field(buf []byte, term byte) ([]byte, error) {
	for {
		chunk, err := r.r.ReadSlice(term)
		buf = append(buf, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return buf, err
	}
}

// identify matches the first field of a command against the command table the way
// update-ref does: by prefix, followed by SP for commands with arguments and by the
// terminator for those without.
func identify(first []byte, term byte) (args int, ctl control) {
	for _, c := range commandArgs {
		if !bytes.HasPrefix(first, []byte(c.name)) || len(first) <= len(c.name) {
			continue
		}
		want := byte(' ')
		if c.args == 0 {
			want = term
		}
		if first[len(c.name)] != want {
			continue
		}
		switch c.name {
		case "start":
			ctl = ctlStart
		case "prepare":
			ctl = ctlPrepare
		case "commit":
			ctl = ctlCommit
		case "abort":
			ctl = ctlAbort
		}
		return c.args, ctl
	}
	return 0, notControl
}

// tally counts the ref updates of --stdin input as it is framed (update, create,
// delete and their symref forms), keeping the first maxRefs names. A nil tally counts
// nothing.
type tally struct {
	counted bool
	updates int
	refs    []string
}

func (t *tally) add(cmd []byte, nul bool) {
	if t == nil {
		return
	}
	t.counted = true
	verb, rest, _ := strings.Cut(string(cmd), " ")
	switch verb {
	case "update", "create", "delete", "symref-update", "symref-create", "symref-delete":
	default:
		return
	}
	term := "\n"
	if nul {
		term = "\x00"
	}
	ref, _, _ := strings.Cut(rest, term)
	if !nul {
		ref, _, _ = strings.Cut(ref, " ")
	}
	t.updates++
	if len(t.refs) < maxRefs {
		t.refs = append(t.refs, ref)
	}
}

// result is res with the tally's count (-1 when nothing was counted).
func (t *tally) result(res Result) Result {
	res.Updates = -1
	if t != nil && t.counted {
		res.Updates, res.Refs = t.updates, t.refs
	}
	return res
}
