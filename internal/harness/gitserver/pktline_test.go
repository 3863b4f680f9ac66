package gitserver

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
)

const (
	oidA = "1111111111111111111111111111111111111111"
	oidB = "2222222222222222222222222222222222222222"
	oidC = "3333333333333333333333333333333333333333"
	zero = "0000000000000000000000000000000000000000"
)

func pkts(lines ...string) []byte {
	var b []byte
	for _, l := range lines {
		if l == "" {
			b = appendSpecial(b, 0)
			continue
		}
		b = appendPkt(b, []byte(l))
	}
	return b
}

// band is one side-band packet.
func band(n byte, data string) []byte { return appendPkt(nil, append([]byte{n}, data...)) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

var sidebandReq = request{caps: []string{"report-status", "side-band-64k", "quiet"},
	commands: []command{{oidA, oidC, "refs/heads/main"}, {zero, oidC, "refs/heads/new"}}}

func TestParseRequest(t *testing.T) {
	t.Parallel()
	body := cat(pkts(
		"shallow "+oidB,
		oidA+" "+oidC+" refs/heads/main\x00 report-status-v2 side-band-64k quiet atomic object-format=sha1 agent=git/2.55.0",
		oidA+" "+zero+" refs/heads/gone\n",
		"",
		"push-option-1",
		"",
	), []byte("PACK\x00\x00\x00\x02garbage"))
	want := request{caps: []string{"report-status-v2", "side-band-64k", "quiet", "atomic", "object-format=sha1", "agent=git/2.55.0"},
		commands: []command{{oidA, oidC, "refs/heads/main"}, {oidA, zero, "refs/heads/gone"}}}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(body)
	zw.Close()
	for name, in := range map[string]struct {
		body []byte
		enc  string
	}{"plain": {body, ""}, "gzip": {gz.Bytes(), "gzip"}} {
		q, err := parseRequest(in.body, in.enc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Join(q.caps, " ") != strings.Join(want.caps, " ") || len(q.commands) != 2 ||
			q.commands[0] != want.commands[0] || q.commands[1] != want.commands[1] {
			t.Errorf("%s: %+v, want %+v", name, q, want)
		}
		if q.sideband() != 65515 || !q.reports() {
			t.Errorf("%s: side band %d, reports %v", name, q.sideband(), q.reports())
		}
	}
	for name, bad := range map[string][]byte{
		"no flush":    pkts(oidA + " " + oidC + " refs/heads/main"),
		"no commands": pkts("shallow "+oidB, ""),
		"bad length":  []byte("00zz"),
		"short":       []byte("0003"),
		"truncated":   []byte("0040" + oidA),
	} {
		if _, err := parseRequest(bad, ""); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRewrite(t *testing.T) {
	t.Parallel()
	cas := "error: cannot lock ref 'refs/heads/main': is at " + oidB + " but expected " + oidA + "\n"
	exists := "error: cannot lock ref 'refs/heads/new': reference already exists\n"
	report := pkts("unpack ok\n", "ng refs/heads/main incorrect old value provided\n", "ng refs/heads/new reference already exists\n", "")
	// git's answer, with a keep-alive, the CAS message split across two packets, and
	// the report split across two band-1 packets.
	git := cat(
		band(1, ""),
		band(2, cas[:20]), band(2, cas[20:]+exists[:10]), band(2, exists[10:]),
		band(2, "hook says hi\n"),
		band(1, string(report[:15])), band(1, string(report[15:])),
		[]byte("0000"),
	)
	github := cat(
		band(1, ""),
		band(2, "hook says hi\n"),
		band(1, string(pkts("unpack ok\n",
			"ng refs/heads/main cannot lock ref 'refs/heads/main': is at "+oidB+" but expected "+oidA+"\n",
			"ng refs/heads/new cannot lock ref 'refs/heads/new': reference already exists\n", ""))),
		[]byte("0000"),
	)
	gitlab := cat(
		band(1, ""),
		band(2, exists),
		band(2, "hook says hi\n"),
		band(1, string(report)),
		[]byte("0000"),
	)
	for _, tc := range []struct {
		forge Forge
		want  []byte
	}{{ForgeGit, git}, {ForgeGitHub, github}, {ForgeGitLab, gitlab}} {
		if got := tc.forge.rewrite(sidebandReq, git); !bytes.Equal(got, tc.want) {
			t.Errorf("%q:\n%q\nwant\n%q", tc.forge, got, tc.want)
		}
	}

	// Without a side band the answer is the bare report.
	bare := sidebandReq
	bare.caps = []string{"report-status"}
	want := pkts("unpack ok\n", "ng refs/heads/main incorrect old value provided\n", "ng refs/heads/new reference already exists\n", "")
	if got := ForgeGitLab.rewrite(bare, report); !bytes.Equal(got, want) {
		t.Errorf("bare report: %q", got)
	}

	// Nothing to fold: git's bytes, packet boundaries and all.
	for name, body := range map[string][]byte{
		"ok":                cat(band(2, "hi\n"), band(1, string(pkts("unpack ok\n", "ok refs/heads/main\n", ""))), []byte("0000")),
		"line of an ok ref": cat(band(2, cas), band(1, string(pkts("unpack ok\n", "ok refs/heads/main\n", ""))), []byte("0000")),
		"other message":     cat(band(2, "error: hook declined\n"), band(1, string(pkts("unpack ok\n", "ng refs/heads/main hook declined\n", ""))), []byte("0000")),
		"truncated":         cat(band(2, cas), []byte("00")),
	} {
		if got := ForgeGitHub.rewrite(sidebandReq, body); !bytes.Equal(got, body) {
			t.Errorf("%s: %q, want it unchanged", name, got)
		}
	}
}

// TestRewriteReftableConflict: GitHub's reason for a directory/file conflict has
// "cannot lock ref", which the reftable backend's message lacks.
func TestRewriteReftableConflict(t *testing.T) {
	t.Parallel()
	q := request{caps: []string{"report-status", "side-band-64k"}, commands: []command{{zero, oidC, "refs/heads/d/x"}}}
	body := cat(band(2, "error: 'refs/heads/d' exists; cannot create 'refs/heads/d/x'\n"),
		band(1, string(pkts("unpack ok\n", "ng refs/heads/d/x refname conflict\n", ""))), []byte("0000"))
	want := cat(band(1, string(pkts("unpack ok\n", "ng refs/heads/d/x cannot lock ref 'refs/heads/d/x': 'refs/heads/d' exists; cannot create 'refs/heads/d/x'\n", ""))), []byte("0000"))
	if got := ForgeGitHub.rewrite(q, body); !bytes.Equal(got, want) {
		t.Errorf("%q\nwant\n%q", got, want)
	}
	if got := ForgeGitLab.rewrite(q, body); !bytes.Equal(got, body) {
		t.Errorf("gitlab changed it: %q", got)
	}
}

func TestSynthesize(t *testing.T) {
	t.Parallel()
	got := synthesize(sidebandReq, []string{"one", ""}, map[string]string{"refs/heads/new": "special"}, "failure")
	want := cat(band(2, "one\n"), band(2, "\n"),
		band(1, string(pkts("unpack ok\n", "ng refs/heads/main failure\n", "ng refs/heads/new special\n", ""))), []byte("0000"))
	if !bytes.Equal(got, want) {
		t.Errorf("%q\nwant\n%q", got, want)
	}
	bare := sidebandReq
	bare.caps = []string{"report-status-v2"}
	if got, want := synthesize(bare, []string{"lost"}, nil, "x"), pkts("unpack ok\n", "ng refs/heads/main x\n", "ng refs/heads/new x\n", ""); !bytes.Equal(got, want) {
		t.Errorf("no side band: %q", got)
	}
	// A report larger than one side-band packet is split.
	small := sidebandReq
	small.caps = []string{"report-status", "side-band"}
	long := synthesize(small, nil, nil, strings.Repeat("r", 900))
	ps, rest := readPkts(long)
	if len(rest) != 0 || len(ps) < 3 || ps[len(ps)-1].special != 0 {
		t.Fatalf("%d packets, rest %q", len(ps), rest)
	}
	var report []byte
	for _, p := range ps[:len(ps)-1] {
		if len(p.data) > 1000-4 || p.data[0] != bandData {
			t.Errorf("packet of %d bytes on band %d", len(p.data), p.data[0])
		}
		report = append(report, p.data[1:]...)
	}
	if rps, rrest := readPkts(report); len(rrest) != 0 || len(rps) != 4 {
		t.Errorf("report of %d packets, rest %q", len(rps), rrest)
	}
}

func TestRefuse(t *testing.T) {
	t.Parallel()
	rs := []Refusal{GH013("refs/heads/new"), GH006("refs/heads/main")}
	got := refuse(rs, sidebandReq, "http://h/o/r")
	var want []byte
	for _, l := range append(GH006("refs/heads/main").Lines, GH013("refs/heads/new").Lines...) {
		want = append(want, band(2, strings.ReplaceAll(l, "{repo}", "http://h/o/r")+"\n")...)
	}
	want = cat(want, band(1, string(pkts("unpack ok\n",
		"ng refs/heads/main protected branch hook declined\n",
		"ng refs/heads/new push declined due to repository rule violations\n", ""))), []byte("0000"))
	if !bytes.Equal(got, want) {
		t.Errorf("%q\nwant\n%q", got, want)
	}
	if got := refuse(rs, request{caps: sidebandReq.caps, commands: []command{{oidA, oidB, "refs/heads/other"}}}, ""); got != nil {
		t.Errorf("refused an unlisted ref: %q", got)
	}
}

// FuzzRewrite: any answer, any capabilities: no panic; ForgeGit and an answer with
// nothing to fold are untouched; a rewritten answer has nothing left to fold.
func FuzzRewrite(f *testing.F) {
	cas := "error: cannot lock ref 'refs/heads/main': is at " + oidB + " but expected " + oidA + "\n"
	f.Add(cat(band(1, ""), band(2, cas), band(1, string(pkts("unpack ok\n", "ng refs/heads/main failed\n", ""))), []byte("0000")), "side-band-64k report-status")
	f.Add(cat(band(2, cas[:9]), band(3, "x"), band(2, cas[9:])), "side-band report-status-v2")
	f.Add(pkts("unpack ok\n", "ng refs/heads/main x\n", ""), "report-status")
	f.Fuzz(func(t *testing.T, body []byte, caps string) {
		q := request{caps: strings.Fields(caps)}
		if got := ForgeGit.rewrite(q, body); !bytes.Equal(got, body) {
			t.Fatalf("ForgeGit changed the answer")
		}
		for _, forge := range []Forge{ForgeGitHub, ForgeGitLab} {
			once := forge.rewrite(q, body)
			if twice := forge.rewrite(q, once); !bytes.Equal(twice, once) {
				t.Fatalf("%s: a second rewrite changed\n%q\ninto\n%q", forge, once, twice)
			}
		}
	})
}

// FuzzParseRequest: no panic, and every command read has the shape of one.
func FuzzParseRequest(f *testing.F) {
	f.Add(cat(pkts(oidA+" "+oidC+" refs/heads/main\x00report-status side-band-64k", ""), []byte("PACK")), "")
	f.Add(pkts("shallow "+oidA, zero+" "+oidA+" refs/tags/v1\n", ""), "")
	f.Add([]byte("\x1f\x8b"), "gzip")
	f.Fuzz(func(t *testing.T, body []byte, enc string) {
		q, err := parseRequest(body, enc)
		if err != nil {
			return
		}
		if len(q.commands) == 0 {
			t.Fatalf("no error and no commands")
		}
		for _, c := range q.commands {
			if !isOID(c.old) || !isOID(c.new) || c.ref == "" || strings.ContainsAny(c.ref, "\n") {
				t.Fatalf("command %+v", c)
			}
		}
	})
}

// TestAnnounce: a bypass's lines go before the answer, once per bypassed ref named,
// in the order of the commands; without a side band, or with no bypass named, the
// answer is left as it is.
func TestAnnounce(t *testing.T) {
	t.Parallel()
	bs := []Bypass{{Ref: "refs/heads/new", Lines: []string{"n"}}, GitHubBypass("refs/heads/main"),
		{Ref: "refs/heads/main", Lines: []string{"again"}}, {Ref: "refs/heads/other", Lines: []string{"o"}}}
	lines := bypassed(bs, sidebandReq)
	if want := append(GitHubBypass("refs/heads/main").Lines, "n"); strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Fatalf("bypassed = %q, want %q", lines, want)
	}
	answer := band(1, string(pkts("unpack ok\n", "ok refs/heads/main\n", "")))
	want := cat(band(2, "Bypassed rule violations for refs/heads/main:\n"), band(2, "\n"),
		band(2, "- Changes must be made through a pull request.\n"), band(2, "\n"), band(2, "n\n"), answer)
	if got := announce(sidebandReq, lines, answer); !bytes.Equal(got, want) {
		t.Errorf("%q\nwant\n%q", got, want)
	}
	bare := sidebandReq
	bare.caps = []string{"report-status"}
	if got := announce(bare, lines, answer); !bytes.Equal(got, answer) {
		t.Errorf("no side band: %q", got)
	}
	if got := announce(sidebandReq, bypassed(bs[3:], sidebandReq), answer); !bytes.Equal(got, answer) {
		t.Errorf("no bypassed ref named: %q", got)
	}
}
