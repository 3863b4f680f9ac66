package releasetest

import (
	"bytes"
	"debug/elf"
	"testing"
)

// checkStaticStripped checks an ELF binary: no program interpreter (CGO_ENABLED=0
// gave a static binary) and no symbol table (-s -w).
func checkStaticStripped(t *testing.T, b []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%v binary has a program interpreter: dynamically linked", f.Machine)
		}
	}
	for _, name := range []string{".symtab", ".debug_info"} {
		if f.Section(name) != nil {
			t.Errorf("%v binary has %s: not stripped", f.Machine, name)
		}
	}
}
