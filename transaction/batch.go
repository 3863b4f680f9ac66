package transaction

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/refretry/refretry/internal/engine"
	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/gitmsg"
	"github.com/refretry/refretry/internal/lockfile"
)

// batchUpdates runs `update-ref --stdin --batch-updates` (git 2.50+). Its transaction
// drops an update that fails for a classified reason and reports it, "rejected <ref>
// <new> <old> <reason>" on stdout and "error: <detail>" on stderr, instead of failing
// the batch; exit 0. On the files backend a ref lock held by another process is such
// a rejection ("reference already exists"; docs/git-ref-semantics.md §2.5, trap 1), so
// plain git silently leaves those refs unwritten.
//
// refretry resubmits the updates rejected for a lock held on their own ref, and only
// those, with their original old values, until they land or the budget ends. A
// rejection is contention only when git's detail for that very ref is lockfile.c's
// "Unable to create '<that ref's lock>': File exists."; anything else (a real
// "reference already exists", a wrong old value, HEAD.lock: trap 2) is final at once.
// The caller sees one report: git's own when nothing was resubmitted; else the
// rejections that remained, as git printed them, each in the place git gave its first
// rejection, and git's exit code. Failures of the whole batch (exit 128: reftable's
// "cannot lock references", packed-refs.lock) are retried as for any --stdin batch.
//
// Input with transaction verbs (start, prepare, commit, abort) goes through the
// --stdin session instead, whose retries replay whole transactions.
func (r *run) batchUpdates(ctx context.Context, args Args) (Result, error) {
	input := newSpool(0, "")
	defer input.Close()
	if r.stdin != nil {
		if _, err := io.Copy(input, r.stdin); err != nil {
			return Result{ExitCode: 128, Updates: -1}, fmt.Errorf("reading standard input: %w", err)
		}
	}
	var t tally
	units, interactive := splitUnits(input.ReaderFrom(0), args.NUL, &t)
	if interactive {
		r.stdin = input.ReaderFrom(0)
		return r.session(ctx, args)
	}
	b := &batch{r: r, args: args, input: input, units: units, pending: units, slots: map[string]int{}}
	code, err := r.engine().Run(ctx, b)
	return t.result(Result{ExitCode: code}), err
}

// batch is a --batch-updates run as the engine runs it.
type batch struct {
	r        *run
	args     Args
	input    *spool
	units    []unit
	final    []rejection    // rejections that stay, from every attempt
	contend  []rejection    // the last attempt's rejections for a held lock
	last     attemptOutput  // the last attempt's output
	attempts int            // attempts whose git ran
	slots    map[string]int // ref → its rejection's place in git's first report
	pending  []unit         // what the next attempt submits
}

func (b *batch) Attempt(ctx context.Context, a *engine.Attempt) error {
	r := b.r
	var err error
	if b.last, err = r.batchAttempt(ctx, b.args, a, b.pending, len(b.pending) == len(b.units), b.input); err != nil {
		return err
	}
	if b.last.started {
		b.attempts++
	}
	b.contend = nil
	if b.last.code != 0 {
		// The whole batch failed: retried as a whole if it was contention.
		_, err := r.classified(ctx, b.last.code, b.last.stderr)
		return err
	}
	var again []unit
	var rjs []rejection
	rjs, b.last.rest = parseRejections(b.last.stdout, b.last.stderr)
	for _, rj := range rjs {
		// git reports rejections in an order of its own (a symbolic ref's after
		// the others, reftable's name conflicts last): a resubmitted update's
		// outcome takes the place its first rejection had.
		if o, ok := b.slots[rj.ref]; ok {
			rj.order = o
		} else {
			rj.order = len(b.slots)
			b.slots[rj.ref] = rj.order
		}
		u := findUnit(b.pending, rj.ref)
		if u == nil || !rj.lockedOwnRef(r.lockPath(ctx, rj.ref)) {
			b.final = append(b.final, rj)
			continue
		}
		again = append(again, *u)
		b.contend = append(b.contend, rj)
	}
	if len(again) == 0 {
		return nil
	}
	b.pending = again
	// The held lock is contention, judged as any other (the engine), and queued on.
	_, err = r.classified(ctx, 128, b.contend[0].detail)
	return err
}

// Final prints one report: git's own when nothing was resubmitted; else the
// rejections that remained, each in the place git first gave it.
func (b *batch) Final(err error) (int, error) {
	r, last := b.r, b.last
	if b.attempts <= 1 {
		// Nothing was resubmitted: git's report, as git printed it.
		if werr := writeBoth(r.stdout, r.stderr, last.stdout, last.stderr); werr != nil && err == nil {
			err = werr
		}
		return last.code, err
	}
	// Contention that outlasted the budget, or a stale lock: git's verdict on those
	// refs stands (rejected, exit 0), after refretry's line about why it stopped.
	final := append(b.final, b.contend...)
	slices.SortStableFunc(final, func(a, b rejection) int { return cmp.Compare(a.order, b.order) })
	var stdout, stderr bytes.Buffer
	if last.code != 0 {
		// A failed batch: what earlier attempts settled, then git's output of that
		// attempt.
		for _, rj := range final {
			stdout.Write(rj.line)
			stderr.Write(rj.detail)
		}
		stdout.Write(last.stdout)
		stderr.Write(last.stderr)
	} else {
		// What the last attempt printed about the batch as a whole (hook output,
		// warnings) comes first, as it would in one run; then each rejection.
		stderr.Write(last.rest)
		for _, rj := range final {
			stdout.Write(rj.line)
			stderr.Write(rj.detail)
		}
	}
	if werr := writeBoth(r.stdout, r.stderr, stdout.Bytes(), stderr.Bytes()); werr != nil && err == nil {
		err = werr
	}
	return last.code, err
}

// writeBoth writes stdout and then stderr, returning the first write error.
func writeBoth(outW, errW io.Writer, stdout, stderr []byte) error {
	_, err := outW.Write(stdout)
	if _, werr := errW.Write(stderr); werr != nil && err == nil {
		err = werr
	}
	return err
}

// attemptOutput is what one attempt of a batch printed.
type attemptOutput struct {
	started        bool
	code           int
	stdout, stderr []byte
	rest           []byte // stderr lines that belong to no rejection (parseRejections)
}

// batchAttempt runs git once on the pending units (all of the input when whole).
func (r *run) batchAttempt(ctx context.Context, args Args, a *engine.Attempt, pending []unit, whole bool, input *spool) (attemptOutput, error) {
	cmd := r.updateRef(ctx, args)
	cmd.Env = gitexec.WithLockWait(cmd.Env, r.window(a))
	cmd.Stdin = input.ReaderFrom(0)
	if !whole {
		var in bytes.Buffer
		for _, u := range pending {
			if _, err := io.Copy(&in, io.NewSectionReader(readerAt{input}, u.start, u.end-u.start)); err != nil {
				return attemptOutput{}, err
			}
		}
		cmd.Stdin = &in
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	code, ran := gitexec.ExitCode(cmd.ProcessState)
	if !ran {
		c, err := finish(cmd, runErr, errOut.Bytes())
		return attemptOutput{code: c}, err
	}
	return attemptOutput{started: true, code: code, stdout: out.Bytes(), stderr: errOut.Bytes()}, nil
}

// readerAt reads a spool at an offset.
type readerAt struct{ s *spool }

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	return io.ReadFull(r.s.ReaderFrom(off), p)
}

// unit is one update of the input: the command, with the option lines before it that
// apply to it, as byte offsets into the input.
type unit struct {
	ref        string
	start, end int64
}

// splitUnits frames the input as git does and cuts it into units, counting its
// updates in t. interactive is true when it holds transaction verbs.
func splitUnits(input io.Reader, nul bool, t *tally) (units []unit, interactive bool) {
	rd := newReader(input, nul)
	var off, start int64
	var buf []byte
	for {
		cmd, ctl, err := rd.Next(buf[:0])
		buf = cmd
		if len(cmd) > 0 {
			t.add(cmd, nul)
			if ctl != notControl {
				interactive = true
			}
			verb, rest, _ := strings.Cut(string(cmd), " ")
			off += int64(len(cmd))
			if verb != "option" {
				ref := rest
				if nul {
					ref, _, _ = strings.Cut(ref, "\x00")
				} else {
					ref, _, _ = strings.Cut(strings.TrimRight(ref, "\n"), " ")
				}
				units = append(units, unit{ref: ref, start: start, end: off})
				start = off
			}
		}
		if err != nil {
			if start < off { // trailing option lines: git reports them
				units = append(units, unit{start: start, end: off})
			}
			return units, interactive
		}
	}
}

// findUnit is the pending unit that updates ref, nil when none does (HEAD, for one).
func findUnit(units []unit, ref string) *unit {
	for i := range units {
		if units[i].ref == ref && ref != "" {
			return &units[i]
		}
	}
	return nil
}

// rejection is one update git rejected: its stdout line and its stderr detail.
type rejection struct {
	ref    string
	reason string
	line   []byte // "rejected <ref> <new> <old> <reason>\n"
	detail []byte // "error: cannot lock ref '<ref>': …" and the lines that go with it
	order  int    // its place in the report refretry prints
}

// lockedOwnRef reports whether the rejection is provably lock contention on the
// ref's own lock: "reference already exists" on stdout, and on stderr lockfile.c's
// message for exactly lock.
func (rj rejection) lockedOwnRef(lock string) bool {
	if rj.reason != "reference already exists" || lock == "" {
		return false
	}
	first, _, _ := strings.Cut(string(rj.detail), "\n")
	msg, ok := strings.CutPrefix(first, "error: ")
	if !ok {
		return false
	}
	inner, ref := gitmsg.StripCannotLockRef(msg)
	m := gitmsg.Exists().FindStringSubmatch(inner)
	return ref == rj.ref && m != nil && lockfile.SamePath(m[1], lock)
}

// lockPath is the path of ref's lock file on the files backend, in the ref store git
// uses; "" when the store is unknown or reftable (whose one lock fails the whole
// batch).
func (r *run) lockPath(ctx context.Context, ref string) string {
	s, ok := r.store(ctx)
	if !ok {
		return ""
	}
	return s.RefLock(ref)
}

// parseRejections pairs git's "rejected" lines with their "error:" details. git 2.54+
// prints each rejection's detail on stderr as it prints the rejection on stdout, so the
// two come in the same order: each rejection takes the next error block that quotes
// its ref ("cannot lock ref '<ref>': …", "'<ref>' exists; cannot create …", and a
// symbolic ref's "cannot lock ref '<symref>': unable to resolve reference '<ref>'",
// whose rejection names the target). Earlier gits print no details. rest is the
// blocks left over, in order: what git printed about the batch as a whole.
func parseRejections(stdout, stderr []byte) (rjs []rejection, rest []byte) {
	for line := range bytes.Lines(stdout) {
		after, ok := bytes.CutPrefix(line, []byte("rejected "))
		if !ok {
			continue
		}
		f := strings.SplitN(strings.TrimRight(string(after), "\n"), " ", 4)
		if len(f) < 4 {
			continue
		}
		rjs = append(rjs, rejection{ref: f[0], reason: f[3], line: line})
	}
	details := errorBlocks(stderr)
	used := make([]bool, len(details))
	next := 0
	for k := range rjs {
		quoted := []byte("'" + rjs[k].ref + "'")
		for i := next; i < len(details); i++ {
			if bytes.HasPrefix(details[i].text, []byte("error: ")) && bytes.Contains(details[i].text, quoted) {
				rjs[k].detail, used[i], next = details[i].text, true, i+1
				break
			}
		}
	}
	for i, b := range details {
		if !used[i] {
			rest = append(rest, b.text...)
		}
	}
	return rjs, rest
}

type block struct {
	text []byte
}

// errorBlocks cuts stderr into "error: …" blocks, each with the lines that follow it
// up to the next "error:", "fatal:", "warning:" or "hint:" line, and other lines
// each a block of its own.
func errorBlocks(stderr []byte) []block {
	var blocks []block
	for line := range bytes.Lines(stderr) {
		s := string(line)
		if strings.HasPrefix(s, "error: ") {
			blocks = append(blocks, block{text: slices.Clone(line)})
			continue
		}
		if n := len(blocks); n > 0 && !strings.HasPrefix(s, "fatal: ") && !strings.HasPrefix(s, "warning: ") && !strings.HasPrefix(s, "hint: ") {
			blocks[n-1].text = append(blocks[n-1].text, line...)
			continue
		}
		blocks = append(blocks, block{text: slices.Clone(line)})
	}
	return blocks
}
