package transaction

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReaderFraming(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		nul   bool
		input string
		want  []string
		ctl   []control
	}{
		{"text", false, "start\nupdate refs/heads/a 1 2\nprepare\ncommit\n",
			[]string{"start\n", "update refs/heads/a 1 2\n", "prepare\n", "commit\n"},
			[]control{ctlStart, notControl, ctlPrepare, ctlCommit}},
		{"text no final newline", false, "abort\nupdate x", []string{"abort\n", "update x"}, []control{ctlAbort, notControl}},
		{"commit with extra text is not a commit", false, "commit now\n", []string{"commit now\n"}, []control{notControl}},
		{"z update takes three fields", true, "update refs/heads/a\x00new\x00old\x00commit\x00",
			[]string{"update refs/heads/a\x00new\x00old\x00", "commit\x00"}, []control{notControl, ctlCommit}},
		{"z create takes two", true, "create r\x00new\x00start\x00", []string{"create r\x00new\x00", "start\x00"}, []control{notControl, ctlStart}},
		{"z symref-update takes four", true, "symref-update r\x00t\x00oid\x00o\x00abort\x00",
			[]string{"symref-update r\x00t\x00oid\x00o\x00", "abort\x00"}, []control{notControl, ctlAbort}},
		{"z option takes one", true, "option no-deref\x00prepare\x00", []string{"option no-deref\x00", "prepare\x00"}, []control{notControl, ctlPrepare}},
		{"z a newline is data", true, "start\n\x00", []string{"start\n\x00"}, []control{notControl}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rd := newReader(strings.NewReader(tc.input), tc.nul)
			var got []string
			var ctl []control
			for {
				b, c, err := rd.Next(nil)
				if len(b) > 0 {
					got, ctl = append(got, string(b)), append(ctl, c)
				}
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("commands %q, want %q", got, tc.want)
			}
			for i := range ctl {
				if i < len(tc.ctl) && ctl[i] != tc.ctl[i] {
					t.Errorf("command %d kind %v, want %v", i, ctl[i], tc.ctl[i])
				}
			}
		})
	}
}

// FuzzReader checks that framing never loses, adds or reorders a byte, whatever the
// input: what git receives is exactly what the caller sent.
func FuzzReader(f *testing.F) {
	f.Add([]byte("start\nupdate refs/heads/a 1 2\nprepare\ncommit\n"), false)
	f.Add([]byte("update r\x00n\x00o\x00commit\x00"), true)
	f.Add([]byte("symref-update r\x00t\x00"), true)
	f.Add([]byte("\n\n\x00 start"), false)
	f.Fuzz(func(t *testing.T, in []byte, nul bool) {
		rd := newReader(bytes.NewReader(in), nul)
		var out []byte
		for i := 0; ; i++ {
			b, _, err := rd.Next(nil)
			out = append(out, b...)
			if err != nil {
				break
			}
			if len(b) == 0 {
				t.Fatalf("empty command without an error at %d", i)
			}
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("reframed %q as %q", in, out)
		}
	})
}

func TestSpoolSpills(t *testing.T) {
	t.Parallel()
	s := newSpool(8, t.TempDir())
	defer s.Close()
	for _, p := range []string{"abc", "defgh", "ijklmnop"} {
		if _, err := s.Write([]byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if !s.Spilled() || s.Len() != 16 {
		t.Fatalf("spilled=%v len=%d, want true and 16", s.Spilled(), s.Len())
	}
	for _, off := range []int64{0, 5, 16} {
		b, _ := io.ReadAll(s.ReaderFrom(off))
		if want := "abcdefghijklmnop"[off:]; string(b) != want {
			t.Errorf("from %d: %q, want %q", off, b, want)
		}
	}
	if got := string(s.Tail(3)); got != "nop" {
		t.Errorf("tail %q", got)
	}
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args                           []string
		understood, stdin, nul, del, b bool
	}{
		{[]string{"refs/heads/x", "abc"}, true, false, false, false, false},
		{[]string{"--stdin"}, true, true, false, false, false},
		{[]string{"--std"}, true, true, false, false, false},
		{[]string{"--stdin", "--no-stdin"}, true, false, false, false, false},
		{[]string{"-z", "--stdin", "-0"}, true, true, true, false, true},
		{[]string{"--stdin", "--batch"}, true, true, false, false, true},
		{[]string{"-zm", "msg", "--stdin"}, true, true, true, false, false},
		{[]string{"-mzd", "--stdin"}, true, true, false, false, false}, // "zd" is -m's value
		{[]string{"-m", "--stdin", "x", "y"}, true, false, false, false, false},
		{[]string{"-d", "refs/heads/x"}, true, false, false, true, false},
		{[]string{"--", "--stdin"}, true, false, false, false, false},
		{[]string{"--no-deref", "--deref", "--create-reflog", "--stdin"}, true, true, false, false, false},
		{[]string{"-h"}, false, false, false, false, false},
		{[]string{"--no-"}, false, false, false, false, false}, // ambiguous
		{[]string{"--frobnicate"}, false, false, false, false, false},
		{[]string{"--stdin=yes"}, false, true, false, false, false},
		{nil, false, false, false, false, false},
	}
	for _, tc := range tests {
		a := ParseArgs(tc.args)
		if a.Understood != tc.understood || (tc.understood && (a.Stdin != tc.stdin || a.NUL != tc.nul || a.Delete != tc.del || a.Batch != tc.b)) {
			t.Errorf("ParseArgs(%q) = %+v", tc.args, a)
		}
	}
}
