package transaction

import (
	"slices"
	"strings"
	"testing"
)

// splitArgs turns a fuzzer's string into an argument list: NUL separates arguments.
func splitFuzzArgs(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}

// FuzzParseArgs checks ParseArgs on any command line: it keeps the arguments verbatim;
// an empty command line is never understood; what it understands does not change
// when a plain operand is put in front (options and operands mix freely) or when
// "--" and anything at all are appended (the end of options); and it is deterministic.
func FuzzParseArgs(f *testing.F) {
	for _, seed := range []string{
		"refs/heads/x\x00abc", "--stdin", "--std", "-z\x00--stdin\x00-0", "-zm\x00msg\x00--stdin",
		"-mzd\x00--stdin", "-m\x00--stdin\x00x\x00y", "-d\x00refs/heads/x", "--\x00--stdin",
		"--no-deref\x00--deref\x00--create-reflog\x00--stdin", "-h", "--no-", "--stdin=yes",
		"--end-of-options\x00-d", "-m", "--batch-updates\x00--no-batch-updates", "-", "",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := splitFuzzArgs(s)
		a := ParseArgs(args)
		if !slices.Equal(a.Raw, args) {
			t.Fatalf("Raw %q, want %q", a.Raw, args)
		}
		if len(args) == 0 && a.Understood {
			t.Fatal("an empty command line was understood")
		}
		if again := ParseArgs(args); !sameArgs(again, a) {
			t.Fatalf("not deterministic: %+v then %+v", a, again)
		}
		if !a.Understood {
			return
		}
		withOperand := ParseArgs(append([]string{"refs/heads/operand"}, args...))
		if !sameArgs(withOperand, a) {
			t.Errorf("a leading operand changed the result: %+v, then %+v", a, withOperand)
		}
		tail := ParseArgs(append(slices.Clip(args), "--", "-h", "--stdin", "-d", "-z"))
		if !sameArgs(tail, a) {
			t.Errorf("arguments after a final -- changed the result: %+v, then %+v", a, tail)
		}
	})
}

func sameArgs(a, b Args) bool {
	return a.Understood == b.Understood && a.Stdin == b.Stdin && a.NUL == b.NUL &&
		a.Delete == b.Delete && a.Batch == b.Batch
}
