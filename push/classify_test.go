package push

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/harness/testutil"
)

// The stderr and porcelain texts below were captured from real pushes (C locale) with
// the git versions named; the server's padding of 8 spaces after "remote:" lines is kept.
const (
	pad = "        "

	filesLock255 = "remote: error: cannot lock ref 'refs/heads/x': Unable to create '/srv/r.git/./refs/heads/x.lock': File exists." + pad + "\n" +
		"remote: \n" +
		"remote: Another git process seems to be running in this repository, or the lock file may be stale" + pad + "\n" +
		"error: failed to push some refs to 'file:///srv/r.git'\n"
	filesLock239 = "remote: error: cannot lock ref 'refs/heads/x': Unable to create '/srv/r.git/./refs/heads/x.lock': File exists." + pad + "\n" +
		"remote: \n" +
		"remote: Another git process seems to be running in this repository, e.g." + pad + "\n" +
		"remote: an editor opened by 'git commit'. Please make sure all processes" + pad + "\n" +
		"remote: are terminated then try again. If it still fails, a git process" + pad + "\n" +
		"remote: may have crashed in this repository earlier:" + pad + "\n" +
		"remote: remove the file manually to continue." + pad + "\n" +
		"error: failed to push some refs to 'file:///srv/r.git'\n"
	filesDead = "remote: error: cannot lock ref 'refs/heads/x': Unable to create '/srv/r.git/./refs/heads/x.lock': File exists." + pad + "\n" +
		"remote: \n" +
		"remote: Lock was held by process 4242, which is no longer running; the lock file appears to be stale" + pad + "\n" +
		"error: failed to push some refs to 'file:///srv/r.git'\n"
	reftableLock = "remote: error: cannot lock references" + pad + "\n" +
		"error: failed to push some refs to 'file:///srv/r.git'\n"
	failedToPush = "error: failed to push some refs to 'file:///srv/r.git'\n"
)

func porcelain(lines ...string) string {
	return "To file:///srv/r.git\n" + strings.Join(lines, "\n") + "\nDone\n"
}

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		code           int
		stdout, stderr string
		want           failure.Class
		wantLock       string // failure.Lock.Lock, when a lock is the cause
		wantRef        string // RejectedError.Ref, when a rejection is the cause
		wantHTTP       int
	}{
		{name: "success", code: 0, stdout: porcelain("*\trefs/heads/main:refs/heads/x\t[new branch]"), want: ""},
		{name: "2.55 files lock non-atomic", code: 1, stderr: filesLock255,
			stdout: porcelain(" \trefs/heads/main:refs/heads/main\t51cf357..8bb6dea", "!\trefs/heads/main:refs/heads/x\t[remote rejected] (reference already exists)"),
			want:   failure.LockContention, wantLock: "/srv/r.git/./refs/heads/x.lock"},
		{name: "2.55 files lock atomic", code: 1, stderr: filesLock255,
			stdout: porcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (atomic transaction failed)", "!\trefs/heads/main:refs/heads/x\t[remote rejected] (atomic transaction failed)"),
			want:   failure.LockContention, wantLock: "/srv/r.git/./refs/heads/x.lock"},
		{name: "2.39 files lock non-atomic", code: 1, stderr: filesLock239,
			stdout: porcelain("!\trefs/heads/main:refs/heads/x\t[remote rejected] (failed to update ref)"),
			want:   failure.LockContention, wantLock: "/srv/r.git/./refs/heads/x.lock"},
		{name: "reftable lock non-atomic", code: 1, stderr: reftableLock,
			stdout: porcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (failed to update refs)"),
			want:   failure.LockContention, wantLock: ""},
		{name: "reftable lock atomic", code: 1, stderr: reftableLock,
			stdout: porcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (atomic transaction failed)"),
			want:   failure.LockContention},
		{name: "packed-refs lock on a deletion", code: 1,
			stderr: "remote: error: Unable to create '/srv/r.git/./packed-refs.lock': File exists." + pad + "\n" +
				"remote: \n" +
				"remote: Another git process seems to be running in this repository, or the lock file may be stale" + pad + "\n" + failedToPush,
			stdout: porcelain("!\t:refs/heads/feat\t[remote rejected] (failed to update refs)"),
			want:   failure.LockContention, wantLock: "/srv/r.git/./packed-refs.lock"},
		{name: "dead holder is stale", code: 1, stderr: filesDead,
			stdout: porcelain("!\trefs/heads/main:refs/heads/x\t[remote rejected] (reference already exists)"),
			want:   failure.StaleLock, wantLock: "/srv/r.git/./refs/heads/x.lock"},
		{name: "reference already exists without lock message", code: 1, stderr: failedToPush,
			stdout: porcelain("!\trefs/heads/main:refs/heads/x\t[remote rejected] (reference already exists)"),
			want:   failure.Rejected, wantRef: "refs/heads/x"},
		{name: "lock on another ref does not excuse this one", code: 1, stderr: filesLock255,
			stdout: porcelain("!\trefs/heads/main:refs/heads/y\t[remote rejected] (reference already exists)"),
			want:   failure.Rejected, wantRef: "refs/heads/y"},
		{name: "generic failure without lock message", code: 1, stderr: failedToPush,
			stdout: porcelain("!\trefs/heads/main:refs/heads/x\t[remote rejected] (failed to update refs)"),
			want:   failure.Other, wantRef: "refs/heads/x"},
		{name: "lock message without advice", code: 1,
			stderr: "remote: error: cannot lock ref 'refs/heads/x': Unable to create '/srv/r.git/./refs/heads/x.lock': File exists." + pad + "\n" + failedToPush,
			stdout: porcelain("!\trefs/heads/main:refs/heads/x\t[remote rejected] (failed to update ref)"),
			want:   failure.Other},
		{name: "fetch first atomic, 2.39 also says hung up", code: 1,
			stderr: "error: atomic push failed for ref refs/heads/main. status: 5\n\nfatal: the remote end hung up unexpectedly\n" + failedToPush,
			stdout: porcelain("!\trefs/heads/main:refs/heads/main\t[rejected] (fetch first)", "!\trefs/heads/main:refs/heads/n2\t[rejected] (atomic push failed)"),
			want:   failure.Behind, wantRef: "refs/heads/main"},
		{name: "non-fast-forward", code: 1, stderr: failedToPush,
			stdout: porcelain("!\trefs/heads/main:refs/heads/main\t[rejected] (non-fast-forward)"),
			want:   failure.Behind, wantRef: "refs/heads/main"},
		{name: "stale info", code: 1, stderr: failedToPush,
			stdout: porcelain("!\trefs/heads/main:refs/heads/main\t[rejected] (stale info)"),
			want:   failure.Rejected, wantRef: "refs/heads/main"},
		{name: "tag already exists", code: 1, stderr: failedToPush,
			stdout: porcelain("!\trefs/tags/v1:refs/tags/v1\t[rejected] (already exists)"),
			want:   failure.Rejected, wantRef: "refs/tags/v1"},
		{name: "stale info beats a lock on another ref", code: 1, stderr: reftableLock,
			stdout: porcelain("!\trefs/heads/main:refs/heads/main\t[rejected] (stale info)", "!\trefs/heads/main:refs/heads/x\t[remote rejected] (failed to update refs)"),
			want:   failure.Rejected, wantRef: "refs/heads/main"},
		{name: "hook declined", code: 1, stderr: "remote: error: hook declined to update refs/heads/h" + pad + "\n" + failedToPush,
			stdout: porcelain("!\trefs/heads/main:refs/heads/h\t[remote rejected] (hook declined)"),
			want:   failure.Declined, wantRef: "refs/heads/h"},
		{name: "pre-receive declined", code: 1, stderr: failedToPush,
			stdout: porcelain("!\trefs/heads/main:refs/heads/h\t[remote rejected] (pre-receive hook declined)"),
			want:   failure.Declined},
		{name: "deletion prohibited", code: 1, stderr: "remote: error: denying ref deletion for refs/heads/side" + pad + "\n" + failedToPush,
			stdout: porcelain("!\t:refs/heads/side\t[remote rejected] (deletion prohibited)"),
			want:   failure.Declined, wantRef: "refs/heads/side"},
		{name: "moved during the push, atomic", code: 1,
			stderr: "remote: error: cannot lock ref 'refs/heads/main': is at 58c1cf2b204d9704fde1e6ac585fadc5dbaf9cfa but expected d6a2fb04b531ecb4cf3840e4757af716bcf413d4" + pad + "\n" + failedToPush,
			stdout: porcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (atomic transaction failed)", "!\trefs/heads/main:refs/ci/1\t[remote rejected] (atomic transaction failed)"),
			want:   failure.Behind},
		{name: "moved during the push, non-atomic", code: 1,
			stderr: "remote: error: cannot lock ref 'refs/heads/main': is at 58c1cf2b204d9704fde1e6ac585fadc5dbaf9cfa but expected d6a2fb04b531ecb4cf3840e4757af716bcf413d4" + pad + "\n" + failedToPush,
			stdout: porcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (incorrect old value provided)"),
			want:   failure.Behind},
		{name: "incorrect old value without the server's message (GitLab's lost race)", code: 1, stderr: failedToPush,
			stdout: porcelain("!\trefs/heads/main:refs/heads/main\t[remote rejected] (incorrect old value provided)"),
			want:   failure.Behind},
		{name: "unknown reason", code: 1, stderr: failedToPush,
			stdout: porcelain("!\trefs/heads/main:refs/heads/h\t[remote rejected] (something new)"),
			want:   failure.Other},
		{name: "unpacker error with a lock message elsewhere", code: 1, stderr: reftableLock,
			stdout: porcelain("!\trefs/heads/main:refs/heads/h\t[remote rejected] (unpacker error)"),
			want:   failure.Other},
		{name: "connection refused", code: 128,
			stderr: "fatal: unable to access 'http://127.0.0.1:1/x.git/': Failed to connect to 127.0.0.1 port 1 after 0 ms: Couldn't connect to server\n",
			want:   failure.Transport},
		{name: "503 on the advertisement", code: 128,
			stderr: "fatal: unable to access 'http://127.0.0.1:5/r.git/': The requested URL returned error: 503\n",
			want:   failure.Transport, wantHTTP: 503},
		{name: "429", code: 128,
			stderr: "fatal: unable to access 'http://127.0.0.1:5/r.git/': The requested URL returned error: 429\n",
			want:   failure.Transport, wantHTTP: 429},
		{name: "503 on the pack", code: 1,
			stderr: "error: RPC failed; HTTP 503 curl 22 The requested URL returned error: 503\nsend-pack: unexpected disconnect while reading sideband packet\nfatal: the remote end hung up unexpectedly\n",
			want:   failure.Transport, wantHTTP: 503},
		{name: "stall", code: 128,
			stderr: "error: RPC failed; curl 28 Operation too slow. Less than 1000 bytes/sec transferred the last 1 seconds\nfatal: the remote end hung up unexpectedly\n",
			want:   failure.Transport},
		{name: "empty reply", code: 1,
			stderr: "error: RPC failed; curl 52 Empty reply from server\nsend-pack: unexpected disconnect while reading sideband packet\nfatal: the remote end hung up unexpectedly\n",
			want:   failure.Transport},
		{name: "404 is not transient", code: 128,
			stderr: "fatal: repository 'http://127.0.0.1:5/nope.git/' not found\n",
			want:   failure.Other},
		{name: "404 status", code: 128,
			stderr: "fatal: unable to access 'http://127.0.0.1:5/r.git/': The requested URL returned error: 404\n",
			want:   failure.Other},
		{name: "401", code: 128,
			stderr: "fatal: Authentication failed for 'http://127.0.0.1:5/r.git/'\n",
			want:   failure.Auth},
		{name: "403 in RPC", code: 1,
			stderr: "error: RPC failed; HTTP 403 curl 22 The requested URL returned error: 403\nfatal: the remote end hung up unexpectedly\n",
			want:   failure.Auth},
		{name: "ssh permission denied", code: 128,
			stderr: "git@example.com: Permission denied (publickey).\nfatal: Could not read from remote repository.\n",
			want:   failure.Auth},
		{name: "no repository", code: 128,
			stderr: "fatal: '/srv/nothere.git' does not appear to be a git repository\nfatal: Could not read from remote repository.\n",
			want:   failure.Other},
		{name: "usage", code: 129, stderr: "error: unknown option `frob'\nusage: git push [<options>] [<repository> [<refspec>...]]\n", want: failure.Usage},
		{name: "remote says hung up", code: 128, stderr: "remote: fatal: the remote end hung up unexpectedly\n", want: failure.Other},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := Classify(tc.code, []byte(tc.stdout), []byte(tc.stderr))
			if tc.want == "" {
				if e != nil {
					t.Fatalf("Classify = %v, want success", e)
				}
				return
			}
			if e == nil {
				t.Fatalf("Classify = nil, want %s", tc.want)
			}
			if e.Class != tc.want || e.ExitCode != tc.code {
				t.Fatalf("Classify = %s (exit %d), want %s (exit %d); message %q", e.Class, e.ExitCode, tc.want, tc.code, e.Message)
			}
			if tc.want == failure.LockContention || tc.want == failure.StaleLock {
				l := e.Lock
				if l == nil {
					t.Fatalf("no lock in %v", e)
				}
				if l.Path != tc.wantLock || l.Stale != (tc.want == failure.StaleLock) {
					t.Errorf("failure.Lock = %+v, want lock %q", l, tc.wantLock)
				}
			}
			m := e.Moved
			if tc.want == failure.Behind && strings.Contains(tc.stderr, "is at ") && (m == nil || m.Ref != "refs/heads/main" || m.Actual[:7] != "58c1cf2") {
				t.Errorf("failure.Moved = %+v", m)
			}
			var r *RejectedError
			if tc.wantRef != "" && (!errors.As(e, &r) || r.Ref != tc.wantRef) {
				t.Errorf("RejectedError = %+v, want ref %s", r, tc.wantRef)
			}
			var te *TransportError
			if tc.want == failure.Transport && (!errors.As(e, &te) || te.HTTPStatus != tc.wantHTTP) {
				t.Errorf("TransportError = %+v, want status %d", te, tc.wantHTTP)
			}
			if got := e.Class.Retryable(); got != (tc.want == failure.LockContention || tc.want == failure.Transport || tc.want == failure.Race || tc.want == failure.Unknown) {
				t.Errorf("Retryable() = %v", got)
			}
		})
	}
}

func TestParsePorcelain(t *testing.T) {
	t.Parallel()
	out := "To file:///srv/r.git\n" +
		" \trefs/heads/main:refs/heads/main\t51cf357..8bb6dea\n" +
		"+\trefs/heads/f:refs/heads/f\t1111111...2222222 (forced update)\n" +
		"*\tHEAD~1:refs/heads/s2\t[new branch]\n" +
		"-\t:refs/heads/old\t[deleted]\n" +
		"=\trefs/heads/u:refs/heads/u\t[up to date]\n" +
		"!\trefs/heads/main:refs/heads/x\t[remote rejected] (reference already exists)\n" +
		"Done\n"
	rep := ParsePorcelain([]byte(out))
	if rep.URL != "file:///srv/r.git" || !rep.Done || len(rep.Refs) != 6 {
		t.Fatalf("report = %+v", rep)
	}
	want := []RefStatus{
		{' ', "refs/heads/main", "refs/heads/main", "51cf357..8bb6dea", ""},
		{'+', "refs/heads/f", "refs/heads/f", "1111111...2222222", "forced update"},
		{'*', "HEAD~1", "refs/heads/s2", "[new branch]", ""},
		{'-', "", "refs/heads/old", "[deleted]", ""},
		{'=', "refs/heads/u", "refs/heads/u", "[up to date]", ""},
		{'!', "refs/heads/main", "refs/heads/x", "[remote rejected]", "reference already exists"},
	}
	for i, w := range want {
		if rep.Refs[i] != w {
			t.Errorf("ref %d = %+v, want %+v", i, rep.Refs[i], w)
		}
		if got := rep.Refs[i].String(); !strings.Contains(out, got+"\n") {
			t.Errorf("String() = %q is not the input line", got)
		}
	}
	if !rep.Refs[5].RemoteRejected() || rep.Refs[4].Rejected() {
		t.Error("flags misread")
	}
	if rep := ParsePorcelain([]byte("fatal: x\n")); len(rep.Refs) != 0 || rep.Done {
		t.Errorf("garbage parsed as %+v", rep)
	}
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args      []string
		remote    string
		porcelain bool
		atomic    string // "", "true", "false"
	}{
		{[]string{"origin", "main"}, "origin", false, ""},
		{[]string{"-o", "ci.skip", "--force-with-lease=main:abc", "origin", "main"}, "origin", false, ""},
		{[]string{"--porcelain", "--atomic", "file:///x", "main"}, "file:///x", true, "true"},
		{[]string{"--no-atomic", "--", "-weird", "main"}, "-weird", false, "false"},
		{[]string{"--repo=up", "main"}, "main", false, ""}, // the argument wins over --repo, as in git
		{[]string{"--repo=up"}, "up", false, ""},
		{[]string{"--repo", "up"}, "up", false, ""},
		{[]string{"-fo", "opt", "origin"}, "origin", false, ""},
		{[]string{"-ofoo", "origin"}, "origin", false, ""},
		{[]string{"-qvo", "--porcelain", "up"}, "up", false, ""},
		{[]string{"--rep", "up", "main"}, "main", false, ""},
		{[]string{"--rep=up", "main"}, "main", false, ""},
		{[]string{"--recurse-submodules", "check", "--porc", "--no-atom", "origin"}, "origin", true, "false"},
		{[]string{"--receive-pack", "env x git-receive-pack", "origin"}, "origin", false, ""},
		{[]string{"origin", "main", "--porcelain", "--atomic"}, "origin", true, "true"}, // options after the refspecs, as git reads them
		{[]string{"--set-upstream", "origin", "HEAD:results", "--follow-tags", "--atomic"}, "origin", false, "true"},
		{[]string{"origin", "--", "--porcelain"}, "origin", false, ""},
		{nil, "", false, ""},
	}
	for _, tc := range tests {
		a := ParseArgs(tc.args)
		atomic := ""
		if a.Atomic != nil {
			atomic = map[bool]string{true: "true", false: "false"}[*a.Atomic]
		}
		if a.Remote != tc.remote || a.Porcelain != tc.porcelain || atomic != tc.atomic {
			t.Errorf("ParseArgs(%q) = remote %q porcelain %v atomic %q", tc.args, a.Remote, a.Porcelain, atomic)
		}
	}
}

// TestTakesNextArg: the arguments after which git push reads the next one as a value,
// each checked against what git itself does (both gits): given the argument, then
// "value", then a remote that does not exist, git names the remote it pushed to in its
// error — 'value' when the argument did not take it.
func TestTakesNextArg(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"-o": true, "--push-option": true, "--repo": true, "--exec": true, "--receive-pack": true,
		"--recurse-submodules": true, "--push-opt": true, "--push": true, "--recurse": true, "--rep": true,
		"-fo": true, "-qvo": true, "-ofoo": false, "-fofoo": false, "-f": false, "-4": false,
		"--push-option=x": false, "--repo=up": false, "--force": false, "--no-push-option": false,
		"--no-repo": false, "--no-recurse": false, "--forc": false, "--re": false, "--dry": false,
		"--porcelain": false, "--signed": false, "--no-verify": false,
	}
	for arg, want := range cases {
		if got := TakesNextArg(arg); got != want {
			t.Errorf("TakesNextArg(%q) = %v, want %v", arg, got, want)
		}
	}
	for _, g := range testutil.Gits(t) {
		r := testutil.NewRepo(t, g, "files")
		for arg, want := range cases {
			if arg == "--exec" || arg == "--receive-pack" || arg == "--recurse" || arg == "--recurse-submodules" || arg == "--signed" {
				// These take values git judges before it looks for the remote.
				continue
			}
			cmd := exec.Command(g.Path, "push", "--dry-run", arg, "value", "nosuchremote", "main")
			cmd.Dir, cmd.Env = r.Dir, r.Env
			out, _ := cmd.CombinedOutput()
			took := !strings.Contains(string(out), "'value'")
			if strings.Contains(string(out), "ambiguous option") || strings.Contains(string(out), "unknown option") {
				took = false // git stops there: nothing is read as a value
			}
			if took != want {
				t.Errorf("%s push %s value nosuchremote: took the value %v, TakesNextArg says %v\n%s", g.Name(), arg, took, want, out)
			}
		}
	}
}

// TestArgsUsage: the arguments that ask git push for its usage (Args.Usage), each
// checked against what git does with them (both gits): its usage on stdout, with
// nothing pushed (--dry-run to a remote that does not exist, which git names in its
// error when it gets that far).
func TestArgsUsage(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"-h": true, "-v -h": true, "-vh": true, "-4h": true, "-q --atomic -h": true, "nosuchremote main -h": true,
		"--help-all": true, "--repo=up -h": true, "--porc -h": true, "--recurse-submodules no -h": true,
		"-xh": false, "--frobnicate -h": false, "-- -h": false, "-o -h": false, "-oh": false,
		"--repo -h": false, "-fo -h": false, "--push-opt -h": false, "--end-of-options -h": false, "": false,
	}
	for line, want := range cases {
		if got := ParseArgs(strings.Fields(line)).Usage; got != want {
			t.Errorf("ParseArgs(%q).Usage = %v, want %v", line, got, want)
		}
	}
	for _, g := range testutil.Gits(t) {
		r := testutil.NewRepo(t, g, "files")
		for line, want := range cases {
			cmd := exec.Command(g.Path, append([]string{"push", "--dry-run"}, append(strings.Fields(line), "nosuchremote")...)...)
			cmd.Dir, cmd.Env = r.Dir, r.Env
			out, _ := cmd.Output()
			if got := strings.HasPrefix(string(out), "usage: git push"); got != want {
				t.Errorf("%s push --dry-run %s nosuchremote: usage on stdout %v, Usage says %v\n%s", g.Name(), line, got, want, out)
			}
		}
	}
}

func TestHumanTable(t *testing.T) {
	t.Parallel()
	rep := ParsePorcelain([]byte(porcelain("=\trefs/heads/u:refs/heads/u\t[up to date]", "!\trefs/heads/main:refs/heads/main\t[rejected] (fetch first)")))
	want := "To file:///srv/r.git\n ! [rejected]        main -> main (fetch first)\n"
	if got := humanTable(rep, false); got != want {
		t.Errorf("humanTable = %q, want %q", got, want)
	}
	rep = ParsePorcelain([]byte(porcelain("=\trefs/heads/u:refs/heads/u\t[up to date]")))
	if got := humanTable(rep, false); got != "Everything up-to-date\n" {
		t.Errorf("humanTable = %q", got)
	}
}
