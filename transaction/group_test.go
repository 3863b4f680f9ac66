//go:build unix

package transaction

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/testutil"
)

func TestParseCoalescable(t *testing.T) {
	t.Parallel()
	a := strings.Repeat("a", 40)
	b := strings.Repeat("b", 40)
	z := strings.Repeat("0", 40)
	cases := []struct {
		args []string
		ok   bool
		cmd  string
		opts []string
	}{
		{[]string{"refs/heads/x", a}, true, "update refs/heads/x\x00" + a + "\x00\x00", nil},
		{[]string{"refs/heads/x", a, b}, true, "update refs/heads/x\x00" + a + "\x00" + b + "\x00", nil},
		{[]string{"refs/heads/x", a, ""}, true, "update refs/heads/x\x00" + a + "\x00" + z + "\x00", nil},
		{[]string{"-m", "msg", "--no-deref", "--create-reflog", "refs/heads/x", a}, true, "update refs/heads/x\x00" + a + "\x00\x00", []string{"-m", "msg", "--no-deref", "--create-reflog"}},
		{[]string{"-mmsg", "refs/heads/x", a}, true, "update refs/heads/x\x00" + a + "\x00\x00", []string{"-m", "msg"}},
		{[]string{"-d", "refs/heads/x"}, true, "delete refs/heads/x\x00\x00", nil},
		{[]string{"-d", "refs/heads/x", b}, true, "delete refs/heads/x\x00" + b + "\x00", nil},
		{[]string{"-d", "refs/heads/x", z}, true, "delete refs/heads/x\x00\x00", nil},
		{[]string{"-d", "refs/heads/x", ""}, true, "delete refs/heads/x\x00\x00", nil},
		{[]string{"refs/heads/x", "HEAD"}, false, "", nil},                                                                    // a revision: git resolves it
		{[]string{"refs/heads/x", strings.ToUpper(a)}, false, "", nil},                                                        // not the plain spelling
		{[]string{"refs/heads/x", a, strings.Repeat("b", 64)}, false, "", nil},                                                // mixed lengths
		{[]string{"HEAD", a}, false, "", nil},                                                                                 // not under refs/
		{[]string{"refs/bisect/bad", a}, false, "", nil},                                                                      // per-worktree
		{[]string{"refs/heads/a..b", a}, false, "", nil},                                                                      // invalid
		{[]string{"refs/heads/x.lock", a}, false, "", nil},                                                                    // invalid
		{[]string{"refs/heads/x", a, b, a}, false, "", nil},                                                                   // usage
		{[]string{"-d", "refs/heads/x", a, b}, false, "", nil},                                                                // usage
		{[]string{"--no-d", "refs/heads/x", a}, false, "", nil},                                                               // abbreviation
		{[]string{"-dm", "x", "refs/heads/x"}, false, "", nil},                                                                // bundle
		{[]string{"--", "refs/heads/x", a}, false, "", nil},                                                                   // --
		{[]string{"-m", "", "refs/heads/x", a}, false, "", nil},                                                               // git refuses it
		{[]string{"--stdin"}, false, "", nil},                                                                                 // not a single-ref form
		{[]string{"refs/heads/x", a, "-m"}, false, "", nil},                                                                   // -m without value
		{[]string{"refs/heads/x", "--no-deref", a}, true, "update refs/heads/x\x00" + a + "\x00\x00", []string{"--no-deref"}}, // options anywhere, as git
	}
	for _, tc := range cases {
		u, o, ok := parseCoalescable(tc.args)
		if ok != tc.ok {
			t.Errorf("%q: ok %v, want %v", tc.args, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if got := u.command(); got != tc.cmd {
			t.Errorf("%q: command %q, want %q", tc.args, got, tc.cmd)
		}
		if got := o.args(); fmt.Sprint(got) != fmt.Sprint(tc.opts) {
			t.Errorf("%q: options %q, want %q", tc.args, got, tc.opts)
		}
	}
}

func TestRefSet(t *testing.T) {
	t.Parallel()
	s := newRefSet()
	s.add("refs/heads/a/b")
	for ref, want := range map[string]bool{
		"refs/heads/a/b":   true,  // the same ref
		"refs/heads/a":     true,  // its directory
		"refs/heads/a/b/c": true,  // below it
		"refs/heads/a/c":   false, // a sibling
		"refs/heads/ab":    false,
	} {
		if got := s.conflicts(ref); got != want {
			t.Errorf("conflicts(%q) = %v, want %v", ref, got, want)
		}
	}
}

func TestBlamed(t *testing.T) {
	t.Parallel()
	ms := []pendingEntry{{ID: "1"}, {ID: "2"}, {ID: "3"}}
	ms[0].Update.Ref, ms[1].Update.Ref, ms[2].Update.Ref = "refs/heads/a", "refs/heads/a/b", "refs/heads/c"
	for stderr, want := range map[string]string{
		"fatal: cannot lock ref 'refs/heads/c': is at 1 but expected 2\n":                          "3",
		"fatal: cannot process 'refs/heads/a' and 'refs/heads/a/b' at the same time\n":             "1 2",
		"hint: x\nfatal: in 'preparing' phase, update aborted by the reference-transaction hook\n": "",
		"fatal: trying to write ref 'refs/heads/a/b' with nonexistent object 1\n":                  "2",
	} {
		named := blamed([]byte(stderr), ms)
		var got []string
		for _, m := range ms {
			if named[m.ID] {
				got = append(got, m.ID)
			}
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%q: blamed %v, want %s", stderr, got, want)
		}
	}
}

func TestProcAlive(t *testing.T) {
	t.Parallel()
	if !self().alive() {
		t.Fatal("this process is not alive")
	}
	me := self()
	if me.Start == 0 {
		t.Skip("no /proc start times here")
	}
	reused := procID{PID: me.PID, Start: me.Start + 1}
	if reused.alive() {
		t.Error("a different start time was taken for the same process")
	}
}

// groupFixture is a repository with a store and a set of pending updates, as
// concurrent invocations would leave them.
type groupFixture struct {
	t    *testing.T
	repo *testutil.Repo
	st   *store
	ids  []string
	refs []string
	want map[string]string // ref -> value after its update
}

const fixtureKey = "k"

func newGroupFixture(t *testing.T, g testutil.Git, backend string, n int) *groupFixture {
	t.Helper()
	repo := testutil.NewRepo(t, g, backend)
	f := &groupFixture{t: t, repo: repo, st: &store{dir: filepath.Join(repo.GitDir, "refretry")}, want: map[string]string{}}
	if err := f.st.ensure(); err != nil {
		t.Fatal(err)
	}
	other := repo.NewCommit("second")
	repo.Run("update-ref", "refs/heads/cas", repo.Commit)
	for i := range n {
		var u groupUpdate
		switch i {
		case 0: // compare-and-swap of an existing ref
			u = groupUpdate{Ref: "refs/heads/cas", New: other, Old: repo.Commit, HasOld: true}
			f.want[u.Ref] = other
		default: // create, must not exist
			u = groupUpdate{Ref: fmt.Sprintf("refs/heads/g/%d", i), New: repo.Commit, HasOld: true}
			f.want[u.Ref] = repo.Commit
		}
		id := newID()
		if err := f.st.addPending(id, pendingRecord{Key: fixtureKey, Proc: self(), Update: u}); err != nil {
			t.Fatal(err)
		}
		f.ids = append(f.ids, id)
		f.refs = append(f.refs, u.Ref)
	}
	return f
}

// grouper returns the invocation whose update is pending under id.
func (f *groupFixture) grouper(id string, st *store) *grouper {
	var u groupUpdate
	for i, x := range f.ids {
		if x == id {
			u.Ref = f.refs[i]
		}
	}
	r := &Runner{Git: f.repo.Git.Path, Dirs: []string{f.repo.Dir}, Env: f.repo.Env, Stderr: &bytes.Buffer{}}
	r.start = time.Now()
	return &grouper{r: r, u: u, key: fixtureKey, id: id, st: st}
}

// reflogs returns how many reflog entries ref has: one per applied update.
func (f *groupFixture) reflogs(ref string) int {
	out := f.repo.Run("reflog", "show", "--format=%H", ref)
	if out == "" {
		return 0
	}
	return len(strings.Split(out, "\n"))
}

func (f *groupFixture) listDir(sub string) []string {
	ents, _ := os.ReadDir(filepath.Join(f.st.dir, sub))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestGroupCrashAtEveryStep stops a leader at each step of its work, as kill -9
// would, then lets recovery and later leaders finish: every update ends applied
// exactly once, and each outcome recorded matches the repository.
func TestGroupCrashAtEveryStep(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	steps := []string{"claim", "record", "started", "pid", "input-partial", "input", "exited",
		"settle-one", "settled", "unclaimed", "dropped", "none"}
	for _, backend := range []string{"files", "reftable"} {
		for _, step := range steps {
			t.Run(backend+"/"+step, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				f := newGroupFixture(t, g, backend, 5)
				crashing := &store{dir: f.st.dir, fault: func(s string) error {
					if s == step {
						return errCrash
					}
					return nil
				}}
				err := f.grouper(f.ids[0], crashing).lead(ctx)
				if step == "none" && err != nil || step != "none" && !errors.Is(err, errCrash) {
					t.Fatalf("lead: %v", err)
				}
				// A later line holder recovers.
				if err := f.st.recover(ctx); err != nil {
					t.Fatal(err)
				}
				if c := f.listDir(dirClaimed); len(c) != 0 {
					t.Errorf("claims left after recovery: %v", c)
				}
				if gr := f.listDir(dirGroups); len(gr) != 0 {
					t.Errorf("group files left after recovery: %v", gr)
				}
				refs := f.repo.Refs("refs/heads/")
				for i, id := range f.ids {
					kind, _, found, err := f.st.outcome(id)
					if err != nil {
						t.Fatal(err)
					}
					applied := refs[f.refs[i]] == f.want[f.refs[i]]
					switch {
					case found && kind == outcomeOK && !applied:
						t.Errorf("%s: outcome ok but not applied", f.refs[i])
					case !found && applied:
						t.Errorf("%s: applied but no outcome recorded", f.refs[i])
					case !found && !f.st.isPending(id):
						t.Errorf("%s: neither decided nor pending", f.refs[i])
					}
				}
				// Later leaders commit whatever is still pending.
				for rounds := 0; ; rounds++ {
					pend, err := f.st.pending(time.Now())
					if err != nil {
						t.Fatal(err)
					}
					if len(pend) == 0 {
						break
					}
					if rounds > len(f.ids) {
						t.Fatalf("still pending: %v", pend)
					}
					if err := f.grouper(pend[0].ID, f.st).lead(ctx); err != nil {
						t.Fatal(err)
					}
				}
				refs = f.repo.Refs("refs/heads/")
				for i, id := range f.ids {
					ref := f.refs[i]
					if refs[ref] != f.want[ref] {
						t.Errorf("%s = %q, want %s", ref, refs[ref], f.want[ref])
					}
					wantLogs := 1
					if ref == "refs/heads/cas" {
						wantLogs = 2 // its creation, then the update
					}
					if n := f.reflogs(ref); n != wantLogs {
						t.Errorf("%s: %d reflog entries, want %d (applied once)", ref, n, wantLogs)
					}
					if kind, _, found, _ := f.st.outcome(id); !found || kind != outcomeOK {
						t.Errorf("%s: outcome %q (found %v), want ok", ref, kind, found)
					}
				}
			})
		}
	}
}

// TestGroupIsolatesFailures: members whose compare-and-swap fails are handed back to
// run alone, the others are applied together.
func TestGroupIsolatesFailures(t *testing.T) {
	t.Parallel()
	g := testutil.NewGit(t)
	for _, backend := range []string{"files", "reftable"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newGroupFixture(t, g, backend, 6)
			// Two members now fail: the ref they must create exists.
			f.repo.Run("update-ref", f.refs[2], f.repo.Commit)
			f.repo.Run("update-ref", f.refs[4], f.repo.Commit)
			if err := f.grouper(f.ids[0], f.st).lead(ctx); err != nil {
				t.Fatal(err)
			}
			for i, id := range f.ids {
				kind, _, found, _ := f.st.outcome(id)
				want := outcomeOK
				if i == 2 || i == 4 {
					want = outcomeSolo
				}
				if !found || kind != want {
					t.Errorf("%s: outcome %q, want %q", f.refs[i], kind, want)
				}
			}
			if n := f.reflogs(f.refs[1]); n != 1 {
				t.Errorf("%s: %d reflog entries, want 1", f.refs[1], n)
			}
			if n := f.reflogs(f.refs[2]); n != 1 {
				t.Errorf("%s: %d reflog entries, want 1 (the test's own)", f.refs[2], n)
			}
		})
	}
}

// TestWithdraw: a pending update can be withdrawn until a leader claims it, and not
// after.
func TestWithdraw(t *testing.T) {
	t.Parallel()
	st := &store{dir: t.TempDir()}
	if err := st.ensure(); err != nil {
		t.Fatal(err)
	}
	a, b := newID(), newID()
	for _, id := range []string{a, b} {
		if err := st.addPending(id, pendingRecord{Key: "k", Proc: self()}); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := st.withdraw(a); !ok || err != nil {
		t.Errorf("withdraw before claim: %v %v", ok, err)
	}
	if ok, _ := st.claim(b); !ok {
		t.Fatal("claim failed")
	}
	if ok, err := st.withdraw(b); ok || err != nil {
		t.Errorf("withdraw after claim: %v %v, want false", ok, err)
	}
	if ok, _ := st.claim(a); ok {
		t.Error("claimed a withdrawn update")
	}
	// Recovery (the leader died) returns the claim to pending.
	if err := st.recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !st.isPending(b) {
		t.Error("claim not returned to pending")
	}
}

// TestPendingOfDeadProcess: an update whose process is gone is dropped, not applied.
func TestPendingOfDeadProcess(t *testing.T) {
	t.Parallel()
	st := &store{dir: t.TempDir()}
	if err := st.ensure(); err != nil {
		t.Fatal(err)
	}
	dead := deadProcess(t)
	live, gone := newID(), newID()
	st.addPending(live, pendingRecord{Key: "k", Proc: self()})
	st.addPending(gone, pendingRecord{Key: "k", Proc: dead})
	pend, err := st.pending(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(pend) != 1 || pend[0].ID != live {
		t.Errorf("pending %v, want only %s", pend, live)
	}
	if st.isPending(gone) {
		t.Error("a dead process's update is still pending")
	}
}

// TestHousekeeping: old outcomes and dead writers' temporary files go.
func TestHousekeeping(t *testing.T) {
	t.Parallel()
	st := &store{dir: t.TempDir()}
	if err := st.ensure(); err != nil {
		t.Fatal(err)
	}
	dead := deadProcess(t)
	st.setOutcome("old", outcomeOK, nil)
	st.setOutcome("new", outcomeOK, nil)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(st.path(dirDone, "old"), old, old)
	os.WriteFile(st.path(dirTmp, fmt.Sprintf("%d-%d-1", dead.PID, dead.Start)), nil, 0o666)
	me := self()
	mine := fmt.Sprintf("%d-%d-2", me.PID, me.Start)
	os.WriteFile(st.path(dirTmp, mine), nil, 0o666)
	st.housekeep(time.Now())
	if _, _, found, _ := st.outcome("old"); found {
		t.Error("an old outcome was kept")
	}
	if _, _, found, _ := st.outcome("new"); !found {
		t.Error("a fresh outcome was removed")
	}
	ents, _ := os.ReadDir(filepath.Join(st.dir, dirTmp))
	if len(ents) != 1 || ents[0].Name() != mine {
		t.Errorf("tmp holds %v, want only %s", ents, mine)
	}
}

func deadProcess(t *testing.T) procID {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	id := procOf(p.Pid)
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return id
}
