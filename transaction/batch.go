package transaction

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/refretry/refretry/internal/gitexec"
	"github.com/refretry/refretry/internal/gitmsg"
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
// The caller sees one report: the rejections that remained, as git printed them, in
// input order, and git's exit code. Failures of the whole batch (exit 128: reftable's
// "cannot lock references", packed-refs.lock) are retried as for any --stdin batch.
//
// Input with transaction verbs (start, prepare, commit, abort) goes through the
// --stdin session instead, whose retries replay whole transactions.
func (r *run) batchUpdates(ctx context.Context, args Args) (int, error) {
	input := NewSpool(r.SpoolMemory, r.SpoolDir)
	defer input.Close()
	if r.Stdin != nil {
		if _, err := io.Copy(input, r.Stdin); err != nil {
			return 128, fmt.Errorf("reading standard input: %w", err)
		}
	}
	units, interactive := splitUnits(input.ReaderFrom(0), args.NUL)
	if interactive {
		cp := *r.Runner
		cp.Stdin = input.ReaderFrom(0)
		return (&run{Runner: &cp, start: r.start}).session(ctx, args)
	}

	var final []rejection     // rejections that stay, from every attempt
	var contended []rejection // the last attempt's rejections for a held lock
	var last attemptOutput    // the last attempt's output
	pending := units          // what the next attempt submits
	_, err := r.retrier(ctx).Do(ctx, func(ctx context.Context, n int) error {
		var err error
		if last, err = r.batchAttempt(ctx, args, n, pending, len(pending) == len(units), input); err != nil {
			return err
		}
		contended = nil
		if last.code != 0 {
			// The whole batch failed: retried as a whole if it was contention.
			_, err := r.classified(ctx, last.code, last.stderr)
			return err
		}
		var again []unit
		var rjs []rejection
		rjs, last.rest = parseRejections(last.stdout, last.stderr)
		for _, rj := range rjs {
			u := findUnit(pending, rj.ref)
			rj = rj.withOrder(u)
			if u == nil || !rj.lockedOwnRef(r.lockPath(ctx, rj.ref)) {
				final = append(final, rj)
				continue
			}
			again = append(again, *u)
			contended = append(contended, rj)
		}
		if len(again) == 0 {
			return nil
		}
		pending = again
		e := Classify(128, contended[0].detail)
		r.checkStale(ctx, e)
		if e.Class == ClassLockContention {
			r.beforeWait()
		}
		return e
	})
	// Contention that outlasted the budget, or a stale lock: git's verdict on those
	// refs stands (rejected, exit 0), after refretry's line about why it stopped.
	final = append(final, contended...)
	slices.SortStableFunc(final, func(a, b rejection) int { return cmp.Compare(a.order, b.order) })
	var stdout, stderr bytes.Buffer
	for _, rj := range final {
		stdout.Write(rj.line)
		stderr.Write(rj.detail)
	}
	if last.code != 0 {
		// A failed batch: git's output of that attempt, after what earlier attempts
		// settled.
		stdout.Write(last.stdout)
		stderr.Write(last.stderr)
	} else {
		stderr.Write(last.rest)
	}
	if _, werr := stdout.WriteTo(r.Stdout); werr != nil && err == nil {
		err = werr
	}
	if _, werr := stderr.WriteTo(r.Stderr); werr != nil && err == nil {
		err = werr
	}
	return last.code, err
}

// attemptOutput is what one attempt of a batch printed.
type attemptOutput struct {
	started        bool
	code           int
	stdout, stderr []byte
	rest           []byte // stderr lines that belong to no rejection (parseRejections)
}

// batchAttempt runs git once on the pending units (all of the input when whole).
func (r *run) batchAttempt(ctx context.Context, args Args, n int, pending []unit, whole bool, input *Spool) (attemptOutput, error) {
	cmd := r.updateRef(ctx, args)
	cmd.Env = gitexec.WithLockWait(cmd.Env, r.window(n))
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

// readerAt reads a Spool at an offset.
type readerAt struct{ s *Spool }

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	return io.ReadFull(r.s.ReaderFrom(off), p)
}

// unit is one update of the input: the command, with the option lines before it that
// apply to it, as byte offsets into the input.
type unit struct {
	ref        string
	start, end int64
	order      int // its place in the input
}

// splitUnits frames the input as git does and cuts it into units. interactive is true
// when it holds transaction verbs.
func splitUnits(input io.Reader, nul bool) (units []unit, interactive bool) {
	rd := NewReader(input, nul)
	var off, start int64
	var buf []byte
	for {
		cmd, ctl, err := rd.Next(buf[:0])
		buf = cmd
		if len(cmd) > 0 {
			if ctl != NotControl {
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
				units = append(units, unit{ref: ref, start: start, end: off, order: len(units)})
				start = off
			}
		}
		if err != nil {
			if start < off { // trailing option lines: git reports them
				units = append(units, unit{start: start, end: off, order: len(units)})
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
	order  int
}

func (rj rejection) withOrder(u *unit) rejection {
	rj.order = math.MaxInt // after the input's: git named a ref the input did not
	if u != nil {
		rj.order = u.order
	}
	return rj
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
	return ref == rj.ref && m != nil && m[1] == lock
}

// lockPath is the path of ref's lock file on the files backend, "" when the
// repository is unknown or on reftable (whose one lock fails the whole batch).
func (r *run) lockPath(ctx context.Context, ref string) string {
	d, ok := r.repo(ctx)
	if !ok || d.Reftable() {
		return ""
	}
	dir := d.CommonDir
	if !strings.HasPrefix(ref, "refs/") || strings.HasPrefix(ref, "refs/bisect/") ||
		strings.HasPrefix(ref, "refs/worktree/") || strings.HasPrefix(ref, "refs/rewritten/") {
		dir = d.GitDir // per-worktree refs
	}
	return dir + "/" + ref + ".lock"
}

// parseRejections pairs git's "rejected" lines with their "error:" details: the
// block that names the ref as the ref git was locking ("cannot lock ref '<ref>'"),
// else the first other block that quotes it ("verifying symref target: '<ref>': …").
// rest is the blocks left over that name no ref: what git printed about the batch as
// a whole.
func parseRejections(stdout, stderr []byte) (rjs []rejection, rest []byte) {
	details := errorBlocks(stderr)
	used := make([]bool, len(details))
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
	pair := func(match func(b block, ref string) bool) {
		for k := range rjs {
			if rjs[k].detail != nil {
				continue
			}
			for i, b := range details {
				if !used[i] && match(b, rjs[k].ref) {
					rjs[k].detail, used[i] = b.text, true
					break
				}
			}
		}
	}
	pair(func(b block, ref string) bool { return b.ref == ref })
	pair(func(b block, ref string) bool { return b.ref == "" && bytes.Contains(b.text, []byte("'"+ref+"'")) })
	for i, b := range details {
		if !used[i] && b.ref == "" {
			rest = append(rest, b.text...)
		}
	}
	return rjs, rest
}

type block struct {
	ref  string
	text []byte
}

// errorBlocks cuts stderr into "error: cannot lock ref '<ref>': …" blocks, each with
// the lines that follow it up to the next "error:" or "fatal:" line.
func errorBlocks(stderr []byte) []block {
	var blocks []block
	for line := range bytes.Lines(stderr) {
		s := string(line)
		if msg, ok := strings.CutPrefix(s, "error: "); ok {
			_, ref := gitmsg.StripCannotLockRef(strings.TrimRight(msg, "\n"))
			blocks = append(blocks, block{ref: ref, text: slices.Clone(line)})
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
