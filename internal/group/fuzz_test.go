package group

import (
	"bytes"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, and what it accepts becomes one well-formed -z
// command that a leader reads back from a request exactly as it was sent.
func FuzzParse(f *testing.F) {
	a := strings.Repeat("a", 40)
	for _, args := range [][]string{
		{"refs/heads/x", a}, {"-m", "msg", "refs/heads/x", a, ""}, {"-d", "refs/heads/x", a},
		{"--no-deref", "--create-reflog", "refs/heads/a/b", a}, {"-mx", "refs/tags/v1", a, a},
	} {
		f.Add(strings.Join(args, "\x00"))
	}
	f.Fuzz(func(t *testing.T, joined string) {
		args := strings.Split(joined, "\x00")
		u, o, ok := Parse(args)
		if !ok {
			return
		}
		cmd := u.command()
		if !strings.HasPrefix(cmd, "update ") && !strings.HasPrefix(cmd, "delete ") {
			t.Fatalf("%q: command %q", args, cmd)
		}
		if n := strings.Count(cmd, "\x00"); n != 3 && !(u.Delete && n == 2) {
			t.Fatalf("%q: command %q has %d fields", args, cmd, n)
		}
		req := request{key: "k", env: "e", opts: o, ref: u.Ref, cmd: cmd}
		got, ok := decodeRequest(encodeRequest(req))
		if !ok || got != req {
			t.Fatalf("%q: request %+v read back as %+v (%v)", args, req, got, ok)
		}
	})
}

// FuzzDecodeRequest: a leader reads any bytes without panicking; what it accepts
// encodes back to the same bytes, and its command is the one update of the declared
// ref that Parse and Update.command make from the command line a member would have
// had: nothing else reaches a leader's git.
func FuzzDecodeRequest(f *testing.F) {
	a := strings.Repeat("a", 40)
	f.Add(encodeRequest(request{key: "k", env: "e", ref: "refs/heads/x", cmd: "update refs/heads/x\x00" + a + "\x00\x00"}))
	f.Add(encodeRequest(request{key: "k", env: "e", ref: "refs/heads/x", cmd: "delete refs/heads/x\x00" + a + "\x00"}))
	f.Add(encodeRequest(request{key: "k", env: "e", ref: "refs/heads/x", cmd: "delete refs/heads/y\x00\x00"}))
	f.Add([]byte("Q\x00\x00---\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		decodeBaton(msg)
		req, ok := decodeRequest(msg)
		if !ok {
			return
		}
		if back := encodeRequest(req); !bytes.Equal(back, msg) {
			t.Fatalf("%q decoded to %+v, which encodes to %q", msg, req, back)
		}
		f := strings.Split(req.cmd, "\x00")
		var args []string
		switch {
		case strings.HasPrefix(req.cmd, "update ") && len(f) == 4:
			args = []string{req.ref, f[1]}
			if f[2] != "" {
				args = append(args, f[2])
			}
		case strings.HasPrefix(req.cmd, "delete ") && len(f) == 3:
			args = []string{"-d", req.ref}
			if f[1] != "" {
				args = append(args, f[1])
			}
		default:
			t.Fatalf("%q: accepted command %q is no single update", msg, req.cmd)
		}
		u, _, ok := Parse(args)
		if !ok || u.Ref != req.ref || u.command() != req.cmd {
			t.Fatalf("%q: accepted command %q for %s; the command line %q makes %q (%v)", msg, req.cmd, req.ref, args, u.command(), ok)
		}
	})
}
