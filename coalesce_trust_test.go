package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/refretry/refretry/internal/group"
	"github.com/refretry/refretry/internal/harness/testutil"
	"github.com/refretry/refretry/internal/platform"
)

// Group commit against another user on the same host (issue 25, docs/security.md):
// a helper, this test binary started as uid 65534, replays the two attacks on
// root's invocations.

// The helper's settings, in its environment. TestMain runs foreignHelper when
// foreignNameEnv is set.
const (
	foreignNameEnv = "REFRETRY_TEST_FOREIGN_NAME" // the rendezvous point
	foreignKeyEnv  = "REFRETRY_TEST_FOREIGN_KEY"  // the group key of root's invocations
	foreignOIDEnv  = "REFRETRY_TEST_FOREIGN_OID"  // an object id to write
)

// foreignUID is nobody's uid, which the helper runs as.
const foreignUID = 65534

// TestCoalesceForeignUser: while 50 refretry updates run on a reftable repository
// in a 0755 directory (25 queued behind a held line, then 25 more), a helper of
// another user (a) sends well-formed requests with the invocations' key for refs of
// its own, and requests that declare one ref and carry deletes of others, and (b)
// asks to be set aside so that it gets the line, then answers every member
// "applied" with memory files and a process descriptor of its own. No foreign ref
// appears, no ref is deleted, every invocation that exits 0 has its ref written,
// and none runs much past its budget.
func TestCoalesceForeignUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: it starts a helper as uid 65534 against root's group commit")
	}
	t.Parallel()
	r := testutil.NewRepo(t, testutil.NewGit(t), "reftable")
	// The repository is readable by everyone (0755 up to the temporary directory):
	// the other user can stat it, and compute the rendezvous name.
	for d := r.Dir; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	keep := map[string]string{}
	for i := range 4 {
		keep[fmt.Sprintf("refs/keep/%d", i)] = r.Commit
	}
	setRefs(t, r, keep)
	helper := foreignCopy(t)
	rv := rendezvous(t, r)
	const budget = 20 * time.Second
	runs := make([]*coalesceRun, 50)
	for i := range runs {
		runs[i] = &coalesceRun{
			args: []string{fmt.Sprintf("refs/victim/%d", i), r.Commit},
			env:  []string{"REFRETRY_TIMEOUT=" + budget.String()},
		}
	}
	// The first 25 queue behind the test; the key is read from one of their
	// requests (the other user could compute it; see issue 25), and that one,
	// closed unanswered, queues again.
	l, err := platform.Listen(rv)
	if err != nil {
		t.Fatal(err)
	}
	wait1 := startCoalescing(t, r, runs[:25])
	key := readKey(t, l)

	cmd := exec.Command(helper)
	cmd.Dir = "/"
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/", foreignNameEnv + "=" + rv, foreignKeyEnv + "=" + key, foreignOIDEnv + "=" + r.Commit}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: foreignUID, Gid: foreignUID}}
	var helperErr bytes.Buffer
	cmd.Stderr = &helperErr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	helperDone := make(chan struct{})
	var helperLines []string
	go func() {
		defer close(helperDone)
		for s := bufio.NewScanner(out); s.Scan(); {
			helperLines = append(helperLines, s.Text())
		}
	}()
	var killOnce sync.Once
	kill := func() { killOnce.Do(func() { cmd.Process.Kill() }) }
	defer func() { kill(); <-helperDone; cmd.Wait() }()

	// The helper queues one connection of each kind, then the line goes.
	testutil.WaitQueued(t, rv, 25+3)
	group.HandOver(l)
	wait1()
	// 25 more, with the helper still about; it is stopped budget+20s later if
	// they have not all ended by then (a member waiting on its process
	// descriptor waits that long).
	phase2 := make(chan struct{})
	go func() {
		select {
		case <-phase2:
		case <-time.After(budget + 20*time.Second):
		}
		kill()
	}()
	startCoalescing(t, r, runs[25:])()
	close(phase2)
	kill()
	<-helperDone
	cmd.Wait()
	t.Logf("helper (uid %d): %s; %s", foreignUID, strings.Join(helperLines, "; "), lastLine(helperErr.String()))

	if refs := r.Refs("refs/foreign/"); len(refs) != 0 {
		t.Errorf("refs of the other user's in root's repository: %v", refs)
	}
	refs := r.Refs("refs/")
	for ref := range keep {
		if refs[ref] != r.Commit {
			t.Errorf("%s = %q, want %s: deleted by the other user's request", ref, refs[ref], r.Commit)
		}
	}
	var lost, failed, late []string
	for _, c := range runs {
		ref := c.args[0]
		switch {
		case c.res.code == 0 && refs[ref] != r.Commit:
			lost = append(lost, ref)
		case c.res.code != 0:
			failed = append(failed, fmt.Sprintf("%s: exit %d: %s", ref, c.res.code, strings.TrimSpace(c.res.stderr)))
		}
		if took := c.ended.Sub(c.started); took > budget+10*time.Second {
			late = append(late, fmt.Sprintf("%s after %v", ref, took.Round(time.Second)))
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d invocations exited 0 with their ref not written: %v", len(lost), len(runs), lost)
	}
	if len(late) > 0 {
		t.Errorf("%d invocations ran past their budget (%v) by more than 10s: %v", len(late), budget, late)
	}
	if len(failed) > 0 {
		t.Logf("%d invocations failed: %v", len(failed), failed)
	}
}

// foreignCopy copies this test binary where the other user can run it.
func foreignCopy(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	path := filepath.Join(dir, "foreign")
	outf, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(outf, in); err != nil {
		t.Fatal(err)
	}
	if err := outf.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// readKey accepts the first queued invocation, reads the group key from its
// request, and closes it unanswered.
func readKey(t *testing.T, l *platform.Listener) string {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if c == nil {
			if time.Now().After(deadline) {
				t.Fatal("no invocation queued")
			}
			time.Sleep(time.Millisecond)
			continue
		}
		buf := make([]byte, 8<<10)
		n, _, err := c.Recv(buf, 30*time.Second)
		c.Close()
		if err != nil || n < 2 || buf[0] != 'Q' {
			t.Fatalf("request %q: %v", buf[:n], err)
		}
		key, _, _ := bytes.Cut(buf[1:n], []byte{0})
		return string(key)
	}
}

// foreignHelper is the other user's process: it keeps three connections going,
// each asking the line again as soon as it is closed: a well-formed request for a
// ref of its own, one that declares a ref of its own and carries deletes of
// refs/keep/0 and refs/keep/1, and one with another key, which a leader sets aside
// and hands the line to. Holding the line, it answers every member with a 'G' whose
// files say "commit: ok" and whose process is itself, then half of them 'K', the
// others nothing (they wait for it to end). It prints what it did on stdout.
func foreignHelper() int {
	rv, key, oid := os.Getenv(foreignNameEnv), os.Getenv(foreignKeyEnv), os.Getenv(foreignOIDEnv)
	var answered, refused, heldLine atomic.Int64
	var mu sync.Mutex
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	request := func(ref, cmd, key string) []byte {
		return []byte("Q" + key + "\x00e\x00---\x00" + ref + "\x00" + cmd)
	}
	deceive := func(c *platform.Conn, answer bool) {
		defer c.Close()
		var files []*os.File
		for _, name := range []string{"stdout", "stderr", "ends"} {
			f, err := platform.MemFile(name)
			if err != nil {
				return
			}
			defer f.Close()
			files = append(files, f)
		}
		files[0].WriteString("commit: ok\n")
		self, err := platform.ProcessHandle(os.Getpid())
		if err != nil {
			return
		}
		defer self.Close()
		if c.Send([]byte("G0 0"), int(files[0].Fd()), int(files[1].Fd()), int(self.Fd()), int(files[2].Fd())) != nil {
			return
		}
		if answer {
			c.Send([]byte("K"))
		}
		answered.Add(1)
	}
	lead := func(l *platform.Listener, pending []*platform.Conn) {
		if heldLine.Add(1) == 1 {
			report("holding root's line")
		}
		for _, c := range pending {
			deceive(c, true)
		}
		buf := make([]byte, 8<<10)
		for i := 0; ; i++ {
			c, err := l.Accept()
			if err != nil {
				return
			}
			if c == nil {
				time.Sleep(time.Millisecond)
				continue
			}
			c.Recv(buf, time.Second)
			deceive(c, i%2 == 0)
		}
	}
	attack := func(msg func(i int) []byte) {
		buf := make([]byte, 8<<10)
		for i := 0; ; i++ {
			c, err := platform.Dial(rv)
			if err != nil {
				time.Sleep(200 * time.Microsecond)
				continue
			}
			if c.Send(msg(i)) != nil {
				c.Close()
				continue
			}
			for {
				k, fds, err := c.Recv(buf, -1)
				if err != nil || k == 0 {
					refused.Add(1)
					break
				}
				if (buf[0] == 'L' || buf[0] == 'H') && len(fds) > 0 {
					var pending []*platform.Conn
					for _, fd := range fds[1:] {
						pending = append(pending, platform.ConnFromFD(fd))
					}
					go lead(platform.ListenerFromFD(fds[0]), pending)
					break
				}
				for _, fd := range fds {
					syscall.Close(fd)
				}
				if buf[0] != 'G' {
					break
				}
			}
			c.Close()
			time.Sleep(5 * time.Millisecond)
		}
	}
	go attack(func(i int) []byte {
		ref := "refs/foreign/w" + strconv.Itoa(i)
		return request(ref, "update "+ref+"\x00"+oid+"\x00\x00", key)
	})
	go attack(func(i int) []byte {
		ref := "refs/foreign/d" + strconv.Itoa(i)
		return request(ref, "delete refs/keep/0\x00\x00delete refs/keep/1\x00\x00", key)
	})
	go attack(func(i int) []byte {
		ref := "refs/foreign/h" + strconv.Itoa(i)
		return request(ref, "update "+ref+"\x00"+oid+"\x00\x00", "another key")
	})
	go func() {
		for range time.Tick(time.Second) {
			fmt.Fprintf(os.Stderr, "connections closed unanswered: %d, members deceived: %d\n", refused.Load(), answered.Load())
		}
	}()
	select {} // until the test kills it
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
