package push

import (
	"strings"
	"testing"
)

// TestIsProgress reads segments of git push's stderr as git 2.39 and 2.55 write them
// (progress.c's drawings, sideband.c's "remote: " lines, pack-objects' lines) and
// the lines around them that are not progress.
func TestIsProgress(t *testing.T) {
	t.Parallel()
	progress := []string{
		"Enumerating objects: 122, done.\n",
		"Counting objects:   0% (1/122)\r",
		"Counting objects: 100% (122/122), done.\n",
		"Delta compression using up to 2 threads\n",
		"Delta compression using up to 1 thread\n",
		"Compressing objects: 100% (2/2), done.\n",
		"Writing objects:  50% (61/122)\r",
		"Writing objects: 100% (1/1), 154 bytes | 22.00 KiB/s, done.\n",
		"Writing objects:  99% (121/122), 4.20 KiB | 1.40 MiB/s\r",
		"Total 122 (delta 0), reused 0 (delta 0), pack-reused 0\n",
		"Total 64 (delta 2), reused 0 (delta 0), pack-reused 0 (from 0)\n",
		"remote: Resolving deltas:   0% (0/1)        \r",
		"remote: Resolving deltas: 100% (1/1), completed with 1 local object.        \n",
		"remote: Resolving deltas: 100% (9/9), completed with 3 local objects.        \n",
		"remote: Resolving deltas: 100% (2/2), done.        \n",
		"\x1b[Kremote: Resolving deltas:  50% (1/2)\r",
		"Writing objects:                                            \n", // a title alone (a narrow terminal)
		"  42% (51/122), 1.00 MiB | 2.00 MiB/s\r",
		"  100% (122/122), 4.33 KiB | 25.00 KiB/s, done.\n",
		"Counting objects: 3     \r", // a shorter drawing pads over the longer one
	}
	other := []string{
		"To file:///tmp/r.git\n",
		" ! [rejected]        main -> main (fetch first)\n",
		"error: failed to push some refs to 'file:///tmp/r.git'\n",
		"hint: Updates were rejected because the remote contains work that you do not\n",
		"remote: error: cannot lock ref 'refs/heads/main': is at 1 but expected 2        \n",
		"remote: no pushes to this branch        \n",
		"remote: Note: 3, see the docs.        \n",
		"remote: Build: 42        \n",
		"Everything up-to-date\n",
		"Counting objects: 100% (3/3), done.\r", // the closing message ends the line
		"Counting objects:  33% (1/3)\n",        // a drawing that ends a line has one
		"remote:         \n",
		"warning: redirecting to https://example.com/r.git/\n",
		"Writing objects: 100% (1/1)",                      // not ended
		"Title: " + strings.Repeat("1", maxSegment) + "\r", // too long for a meter
	}
	for _, s := range progress {
		if !isProgress([]byte(s)) {
			t.Errorf("isProgress(%q) = false, want true", s)
		}
	}
	for _, s := range other {
		if isProgress([]byte(s)) {
			t.Errorf("isProgress(%q) = true, want false", s)
		}
	}
}

// TestProgressWriter writes a push's stderr to a progressWriter in pieces of every
// size from 1 byte to all of it: what passes on is the progress, whole segments in
// git's order, and withoutProgress keeps exactly the rest, whatever the pieces.
func TestProgressWriter(t *testing.T) {
	t.Parallel()
	pack := "Enumerating objects: 5, done.\n" +
		"Counting objects:  20% (1/5)\rCounting objects: 100% (5/5)\rCounting objects: 100% (5/5), done.\n" +
		"Delta compression using up to 2 threads\n" +
		"Writing objects:  20% (1/5)\rWriting objects: 100% (5/5), 400 bytes | 400.00 KiB/s, done.\n" +
		"Total 5 (delta 1), reused 0 (delta 0), pack-reused 0\n"
	hook := "remote: hook says no        \n"
	resolving := "remote: Resolving deltas:   0% (0/1)        \rremote: Resolving deltas: 100% (1/1), done.        \n"
	// A line longer than maxSegment: held, then dropped by the live side.
	long := "remote: " + strings.Repeat("x", 2*maxSegment) + "\n"
	end := "error: failed to push some refs to 'file:///tmp/r.git'\nfatal: cut short"
	stderr := pack + hook + resolving + long + end
	wantLive, wantRest := pack+resolving, hook+long+end
	for size := 1; size <= len(stderr); size++ {
		var live strings.Builder
		w := &progressWriter{w: &live}
		for b := []byte(stderr); len(b) > 0; {
			n := min(size, len(b))
			if got, err := w.Write(b[:n]); got != n || err != nil {
				t.Fatalf("size %d: Write = %d, %v", size, got, err)
			}
			b = b[n:]
		}
		if live.String() != wantLive {
			t.Fatalf("size %d: passed on\n%q\nwant\n%q", size, live.String(), wantLive)
		}
	}
	if got := string(withoutProgress([]byte(stderr))); got != wantRest {
		t.Errorf("withoutProgress:\n%q\nwant\n%q", got, wantRest)
	}
}

// failingWriter fails every write, as a closed stream does.
type failingWriter struct{ writes int }

func (f *failingWriter) Write(b []byte) (int, error) {
	f.writes++
	return 0, errClosed
}

type closedError struct{}

func (closedError) Error() string { return "closed" }

var errClosed = closedError{}

// TestProgressWriterFailing: a caller's stream that fails costs the progress only:
// the writer takes every byte (git's capture goes on) and stops writing to it.
func TestProgressWriterFailing(t *testing.T) {
	t.Parallel()
	f := &failingWriter{}
	w := &progressWriter{w: f}
	in := "Counting objects:  20% (1/5)\rCounting objects: 100% (5/5), done.\n"
	if n, err := w.Write([]byte(in)); n != len(in) || err != nil {
		t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(in))
	}
	if f.writes != 1 {
		t.Errorf("%d writes to the failed stream, want 1", f.writes)
	}
}
