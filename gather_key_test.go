package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/refretry/refretry/internal/harness/gitserver"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// gatherMAC is a staged ref's authenticator as docs/security.md defines it, computed
// here from the definition, not by refretry.
func gatherMAC(key, branch, u, commit string) string {
	m := hmac.New(sha256.New, []byte(key))
	m.Write([]byte("refretry-gather-v1\x00" + branch + "\x00" + u + "\x00" + commit))
	return hex.EncodeToString(m.Sum(nil))[:32]
}

// TestGatherKeyHandPushed: over smart HTTP (the project's server, git's own
// receive-pack), commits pushed by hand into the staging namespace — the issue's
// reproduction (no authenticator), a forged authenticator, one valid for another
// branch and one valid for another commit — are not landed by keyed jobs' gathers:
// they stay on the remote as they were, each named at most once in a gatherer's
// stderr (its gathers take one commit a wave, so it runs several), while the jobs'
// own commits land. `gather list` shows them unverified, `gather land` leaves them,
// `gather land --accept` lands the one a human accepts, and `gather discard` removes
// another.
func TestGatherKeyHandPushed(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	f := newGatherFixture(t, g)
	srv, err := gitserver.Start(g.Path, f.root, gitserver.Options{ReceivePack: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f.url = srv.URL("r.git")
	const key = "pipeline-secret-0123456789abcdef"
	keyEnv := []string{"REFRETRY_GATHER_KEY=" + key}

	// Someone who may push refs/refretry/* but not main stages commits of their own.
	intruder := f.clone("unrelated")
	forged := f.git(intruder, "rev-parse", "HEAD")
	other := f.git(f.seed, "rev-parse", "HEAD")
	fresh := uuid.Must(uuid.NewV7()).String()
	hand := map[string]string{
		"no authenticator (the issue's)": "0193aaaa-0000-7000-8000-000000000001",
		"a forged authenticator":         fresh + "." + strings.Repeat("5a", 16),
		"valid for another branch":       fresh + "." + gatherMAC(key, "release", fresh, forged),
		"valid for another commit":       fresh + "." + gatherMAC(key, "main", fresh, other),
	}
	for _, id := range hand {
		f.git(intruder, "push", "-q", "origin", "HEAD:refs/refretry/gather/main/"+id)
	}

	// Two keyed jobs at once, one commit a wave.
	outs := make([]string, 2)
	var wg sync.WaitGroup
	for i := range outs {
		dir := f.clone(fmt.Sprintf("job%d", i))
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out := f.refretry(dir, g.Path, keyEnv, "push", "--gather", "--gather-max=1", "origin", "HEAD:main")
			if code != 0 {
				t.Errorf("job%d: exit %d\n%s", i, code, out)
			}
			outs[i] = out
		}()
	}
	wg.Wait()
	log := f.git(f.remote, "log", "--format=%s", "main")
	for i := range outs {
		if n := strings.Count(log+"\n", fmt.Sprintf("result of job%d\n", i)); n != 1 {
			t.Errorf("job%d's commit is on main %d times:\n%s", i, n, log)
		}
	}
	if strings.Contains(log, "result of unrelated") {
		t.Fatalf("a commit staged by hand landed on main:\n%s\njobs' output:\n%s", log, strings.Join(outs, "\n"))
	}
	staged := f.git(f.remote, "for-each-ref", "--format=%(objectname) %(refname)", "refs/refretry/gather/main/")
	for what, id := range hand {
		if !strings.Contains(staged, forged+" refs/refretry/gather/main/"+id) {
			t.Errorf("%s: refs/refretry/gather/main/%s is gone or moved; the remote has\n%s", what, id, staged)
		}
		named := 0
		for i, out := range outs {
			n := strings.Count(out, "refs/refretry/gather/main/"+id+" ("+forged[:7])
			if n > 1 {
				t.Errorf("%s: job%d names it %d times:\n%s", what, i, n, out)
			}
			named += n
		}
		if named == 0 {
			t.Errorf("%s: no gatherer named it:\n%s", what, strings.Join(outs, "\n"))
		}
	}
	if strings.Count(staged, "\n")+1 != len(hand) {
		t.Errorf("staged refs left:\n%s\nwant the %d pushed by hand", staged, len(hand))
	}

	// An operator with the key.
	code, out := f.refretry(f.seed, g.Path, keyEnv, "gather", "list", f.url, "main")
	if code != 0 || strings.Count(out, "unverified") != len(hand) || strings.Count(out, " does not land: ") != len(hand) {
		t.Errorf("gather list: exit %d, want %d unverified entries, each with its reason:\n%s", code, len(hand), out)
	}
	code, out = f.refretry(f.seed, g.Path, keyEnv, "gather", "land", f.url, "main")
	if code != 0 || !strings.Contains(out, "refretry: landed 0 staged commits in 0 gathers\n") ||
		!strings.Contains(out, fmt.Sprintf("refretry: %d staged commits did not verify and stay staged", len(hand))) {
		t.Errorf("gather land: exit %d\n%s", code, out)
	}
	accepted := hand["no authenticator (the issue's)"]
	code, out = f.refretry(f.seed, g.Path, keyEnv, "gather", "land", "--accept", accepted, f.url, "main")
	if code != 0 || !strings.Contains(out, "refretry: landed 1 staged commits in 1 gathers\n") {
		t.Errorf("gather land --accept: exit %d\n%s", code, out)
	}
	if log := f.git(f.remote, "log", "--format=%s|%(trailers:key=Refretry-Gather,valueonly)", "main"); !strings.HasPrefix(log, "result of unrelated|"+accepted+"\n") {
		t.Errorf("the accepted commit is not main's tip:\n%s", log)
	}
	discard := hand["a forged authenticator"]
	if code, out := f.refretry(f.seed, g.Path, keyEnv, "gather", "discard", f.url, "main", discard); code != 0 {
		t.Errorf("gather discard: exit %d\n%s", code, out)
	}
	if left := f.git(f.remote, "for-each-ref", "--format=%(refname)", "refs/refretry/gather/main/"); strings.Count(left, "\n")+1 != len(hand)-2 ||
		strings.Contains(left, discard) || strings.Contains(left, accepted) {
		t.Errorf("after land --accept and discard, staged:\n%s", left)
	}
}

// TestGatherKeyBadInput: a gather key that cannot serve is a usage error (exit 129)
// with one exact line, before anything is staged; without a key, one note says what
// the gather trusts.
func TestGatherKeyBadInput(t *testing.T) {
	t.Parallel()
	f := newGatherFixture(t, testutil.NewGit(t))
	dir := f.clone("job")
	keyFile := filepath.Join(f.root, "key")
	if err := os.WriteFile(keyFile, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	long := "REFRETRY_GATHER_KEY=" + strings.Repeat("k", 16)
	for _, tc := range []struct {
		env  []string
		args []string
		want string
	}{
		{[]string{"REFRETRY_GATHER_KEY=short"}, []string{"push", "--gather", "origin", "HEAD:main"},
			"refretry: REFRETRY_GATHER_KEY: the gather key is 5 bytes; it needs at least 16 (a random secret, e.g. `openssl rand -hex 32`)\n"},
		{nil, []string{"push", "--gather", "--gather-key-file", keyFile, "origin", "HEAD:main"},
			"refretry: --gather-key-file " + keyFile + ": the gather key is 5 bytes; it needs at least 16 (a random secret, e.g. `openssl rand -hex 32`)\n"},
		{[]string{long}, []string{"push", "--gather", "--gather-key-file", keyFile, "origin", "HEAD:main"},
			"refretry: the gather key is set twice, in REFRETRY_GATHER_KEY and with --gather-key-file; set it once\n"},
		{nil, []string{"gather", "land", "--key-file", filepath.Join(f.root, "nope"), "origin", "main"},
			"refretry: --key-file: open " + filepath.Join(f.root, "nope") + ": no such file or directory\n"},
		{[]string{long}, []string{"push", "--gather", "--gather-max-age=0", "origin", "HEAD:main"},
			"refretry: push: --gather-max-age needs a positive duration (30s, 2m), not \"0\"\n"},
		{[]string{long}, []string{"gather", "land", "--max-age=0s", "origin", "main"},
			"refretry: gather: --max-age needs a positive duration (30s, 2m), not \"0s\"\n"},
	} {
		code, out := f.refretry(dir, f.g.Path, tc.env, tc.args...)
		if code != 129 || out != tc.want {
			t.Errorf("%v %v: exit %d, said\n%q\nwant 129 and\n%q", tc.env, tc.args, code, out, tc.want)
		}
	}
	if left := f.git(f.remote, "for-each-ref", "refs/refretry/"); left != "" {
		t.Errorf("staged although the key was refused:\n%s", left)
	}
	code, out := f.refretry(dir, f.g.Path, nil, "push", "--gather", "origin", "HEAD:main")
	if code != 0 || strings.Count(out, "refretry: no gather key (REFRETRY_GATHER_KEY): this gather lands whatever anyone "+
		"who may push refs/refretry/* to the remote staged (docs/security.md)\n") != 1 {
		t.Errorf("without a key: exit %d\n%s", code, out)
	}
}

// movingGit is a git for refretry that, the first time a gather fetches staged refs,
// first force-pushes the intruder's commit (in $INTRUDER) onto each of them: the
// staged ref changes between the look that verified it and the fetch.
const movingGit = `#!/bin/sh
case "$*" in
*fetch*"+refs/refretry/gather/"*)
	if mkdir "$MARK" 2>/dev/null; then
		for a in "$@"; do
			case "$a" in
			+refs/refretry/gather/*) ref=${a#+}; ref=${ref%%:*}; "$REAL_GIT" -C "$INTRUDER" push -q -f origin "HEAD:$ref" || exit 1 ;;
			esac
		done
	fi ;;
esac
exec "$REAL_GIT" "$@"
`

// TestGatherKeyMovedWhileFetched: a keyed job's own staged ref, verified by its
// gather's look, is moved to another commit before the gather fetches it. The gather
// lands nothing of it (the commit fetched is not the one verified), the moved ref
// fails verification from then on and stays, and the job fails saying its ref was
// moved, instead of taking the ref's disappearance for a landing.
func TestGatherKeyMovedWhileFetched(t *testing.T) {
	t.Parallel()
	f := newGatherFixture(t, testutil.NewGit(t))
	intruder := f.clone("unrelated")
	forged := f.git(intruder, "rev-parse", "HEAD")
	job := f.clone("job")
	wrapper := filepath.Join(f.root, "moving-git")
	if err := os.WriteFile(wrapper, []byte(movingGit), 0o755); err != nil {
		t.Fatal(err)
	}
	code, out := f.refretry(job, wrapper, []string{"REFRETRY_GATHER_KEY=pipeline-secret-0123456789abcdef",
		"INTRUDER=" + intruder, "MARK=" + filepath.Join(f.root, "moved")}, "push", "--gather", "origin", "HEAD:main")
	if log := f.git(f.remote, "log", "--format=%s", "main"); strings.Contains(log, "result of") {
		t.Fatalf("landed:\n%s\njob's output:\n%s", log, out)
	}
	staged := f.git(f.remote, "for-each-ref", "--format=%(objectname)", "refs/refretry/gather/main/")
	if code != 1 || staged != forged || !strings.Contains(out, "by someone else: ") ||
		strings.Count(out, ") is not landed and stays staged: its authenticator does not verify") != 1 {
		t.Errorf("exit %d, staged %q (want the moved ref left at %s)\n%s", code, staged, forged, out)
	}
}
