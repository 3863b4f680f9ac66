package push

import (
	"bytes"
	"io"

	"github.com/refretry/refretry/internal/gitmsg"
)

// git push's progress (progress.c, send-pack.c, builtin/pack-objects.c, sideband.c,
// git 2.39 to 2.55) reaches the caller as git writes it, in every attempt; the rest
// of its stderr is written once the attempt is known to be the final one
// (writeOutput). Both read git's stderr as segments: what git writes up to and
// including a "\r" or a "\n", the units its meter is drawn in.

// maxSegment bounds a progress segment: a meter's line is a title and a few
// numbers. A longer segment is not progress, and the live side stops holding it.
const maxSegment = 512

// The patterns are compiled on first use: only a push reads its progress, and every
// other command (a group commit's member above all) would pay for them at start-up.
var (
	// meterSegment is one drawing of a meter (progress.c display): "Title: " (or,
	// after the title was put on a line of its own because the terminal is narrow,
	// two spaces), the counters ("  5% (3/60)" or a bare count), the throughput
	// (", 1.20 MiB | 600.00 KiB/s"), padding, and either "\r" or, the last time, the
	// closing message (", done." or index-pack's ", completed with 1 local object.")
	// and "\n". The server's meters come through the sideband as "remote: " (after
	// "\x1b[K" in recent gits when their stderr is a terminal), then the segment,
	// then spaces that clear the rest of the line.
	meterSegment = gitmsg.LazyRegexp(`^(?:\x1b\[K)?(?:remote: )?(?:[A-Z][a-z]+(?: [a-z]+)*: |  )` +
		`(?: *\d+% \(\d+/\d+\)|\d+)(?:, [^|\r\n]+ \| [^,\r\n]+/s)? *` +
		`(, (?:done|completed with \d+ local objects?)\.)? *([\r\n])$`)
	// meterTitle is a meter's title alone, padded to the terminal's width, when
	// title and counters do not fit on one line.
	meterTitle = gitmsg.LazyRegexp(`^(?:\x1b\[K)?(?:remote: )?[A-Z][a-z]+(?: [a-z]+)*: +\n$`)
	// progressLine is what pack-objects prints only when it shows progress.
	progressLine = gitmsg.LazyRegexp(`^(?:Delta compression using up to \d+ threads?|` +
		`Total \d+ \(delta \d+\), reused \d+ \(delta \d+\)(?:, pack-reused \d+(?: \(from \d+\))?)?)\n$`)
)

// isProgress reports whether seg, a segment of git push's stderr ending in "\r" or
// "\n", is progress: a meter's drawing, its title line, or pack-objects' lines that
// come with the meters.
func isProgress(seg []byte) bool {
	if len(seg) > maxSegment {
		return false
	}
	if m := meterSegment().FindSubmatch(seg); m != nil {
		// "\r" redraws; only the last drawing, with its closing message, ends the line.
		return (len(m[1]) > 0) == (m[2][0] == '\n')
	}
	return meterTitle().Match(seg) || progressLine().Match(seg)
}

// nextSegment splits b after its first "\r" or "\n"; ok is false when b has neither.
func nextSegment(b []byte) (seg, rest []byte, ok bool) {
	i := bytes.IndexAny(b, "\r\n")
	if i < 0 {
		return nil, b, false
	}
	return b[:i+1], b[i+1:], true
}

// withoutProgress is git's stderr without its progress segments: what is left to
// write after the attempt, progress having been written as it came.
func withoutProgress(stderr []byte) []byte {
	out := make([]byte, 0, len(stderr))
	for b := stderr; len(b) > 0; {
		seg, rest, ok := nextSegment(b)
		if !ok {
			return append(out, b...)
		}
		if !isProgress(seg) {
			out = append(out, seg...)
		}
		b = rest
	}
	return out
}

// progressWriter takes git's stderr as git writes it and passes each progress
// segment on to w as soon as it is whole. It accepts every write: git's stderr is
// captured besides (gitexec.Capture), and a caller's stream that fails loses only
// the progress.
type progressWriter struct {
	w       io.Writer
	held    []byte // the segment begun and not ended
	skip    bool   // held grew past maxSegment: the segment is not progress
	stopped bool   // w failed
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n := len(b)
	for len(b) > 0 {
		seg, rest, ok := nextSegment(b)
		if !ok {
			if !p.skip {
				p.held = append(p.held, b...)
				if len(p.held) > maxSegment {
					p.held, p.skip = p.held[:0], true
				}
			}
			break
		}
		if !p.skip {
			if len(p.held) > 0 {
				seg = append(p.held, seg...)
			}
			if isProgress(seg) && !p.stopped {
				_, err := p.w.Write(seg)
				p.stopped = err != nil
			}
		}
		p.held, p.skip, b = p.held[:0], false, rest
	}
	return n, nil
}
