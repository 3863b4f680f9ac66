// Package lockfile judges git's lock files (`<name>.lock`, with the `<name>~pid.lock`
// holder file git 2.54+ may write beside it): how old a held lock is, who holds it, and
// whether it counts as stale ([Rule]). A holder pid that is not running here is no
// proof on its own, as a holder in another pid namespace looks just the same; it
// counts once the lock is older than a grace period. It removes a lock only when it
// is still the very file judged stale. Every refretry command that meets a held lock
// (update-ref, fetch) asks here, so the rule for calling a lock stale is written once.
package lockfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/refretry/refretry/internal/platform"
)

// Rule is when a held lock counts as stale. A pid is read in this process's pid
// namespace, as git reads it (kill(pid, 0)): a holder running in another one (another
// container sharing the repository's volume, or the host seen from a container) looks
// gone from here while it works. So a holder pid that is not running here proves
// nothing on its own; it makes a lock stale only once the lock is older than
// PIDGrace, an age live holders do not reach.
type Rule struct {
	// StaleAfter is the age past which a lock is stale unless its ~pid.lock names a
	// process running here; 0 means that age alone never makes one stale.
	StaleAfter time.Duration
	// PIDGrace is the age past which a lock whose ~pid.lock names a process that is
	// not running here is stale. 0 means StaleAfter: such a lock is then stale no
	// sooner than one without a ~pid.lock (and, when StaleAfter is 0 too, never for
	// that reason). A PIDGrace above StaleAfter changes nothing: age alone decides
	// first.
	PIDGrace time.Duration

	// ownPIDNamespace says whether refretry runs in a pid namespace of its own (a
	// container), which the reasons mention; nil means platform.OwnPIDNamespace.
	// Tests set it, to compare reasons whole wherever they run.
	ownPIDNamespace func() bool
}

// grace is the age past which an unseen holder makes a lock stale; false when it
// never does.
func (r Rule) grace() (time.Duration, bool) {
	if r.PIDGrace > 0 {
		return r.PIDGrace, true
	}
	return r.StaleAfter, r.StaleAfter > 0
}

// decide applies the rule to a lock of age whose ~pid.lock names pid (0 when there is
// none), unseen when no process with that pid runs here. It returns whether the lock
// is stale and why; for a lock that is not, why not when an unseen holder is the
// question, else "". A holder that is seen running is the caller's to judge.
func (r Rule) decide(age time.Duration, pid int, unseen bool) (stale bool, why string) {
	grace, ok := r.grace()
	switch {
	case unseen && ok && age > grace:
		return true, unseenHolder(pid) + ", and the lock is older than the pid grace of " + grace.String() + r.containerNote()
	case r.StaleAfter > 0 && age > r.StaleAfter:
		why = tooOld(r.StaleAfter)
		if unseen {
			why += "; " + unseenHolder(pid)
		}
		return true, why
	case unseen && ok:
		return false, unseenHolder(pid) + ", but the lock is younger than the pid grace of " + grace.String() +
			", and a live holder in another pid namespace looks the same from here" + r.containerNote()
	case unseen:
		return false, unseenHolder(pid) + ", but with neither a stale-after limit nor a pid grace that never makes a lock stale" + r.containerNote()
	}
	return false, ""
}

// containerNote is what a reason adds when refretry runs in a container.
func (r Rule) containerNote() string {
	own := r.ownPIDNamespace
	if own == nil {
		own = platform.OwnPIDNamespace
	}
	if !own() {
		return ""
	}
	return "; refretry runs in a container's pid namespace, where a holder in another container or on the host cannot be seen"
}

// Facts are what the file system says about a held lock.
type Facts struct {
	Present bool          // the lock was there when looked at
	Age     time.Duration // since its last modification
	PID     int           // its holder, from the ~pid.lock file; 0 when none was readable
	// Unseen is set when no process with PID runs in this pid namespace: the holder
	// ended, or it runs in another pid namespace.
	Unseen bool
	Stale  bool   // it counts as stale under the rule
	Reason string // why it is stale, in words; "" when it is not
	// Wait says, for a lock that is not stale although its holder is unseen, why it is
	// still waited for; "" otherwise.
	Wait string
}

// Inspect looks at lock now, under rule. A lock is stale when its ~pid.lock names a
// process that this pid namespace does not have and it is older than the rule's pid
// grace, or when it is older than the rule's stale-after limit. A lock that is not
// there is not stale: the contention it caused is over.
func Inspect(lock string, rule Rule, now time.Time) Facts {
	var f Facts
	fi, err := os.Stat(lock)
	if err != nil {
		return f
	}
	f.Present, f.Age = true, now.Sub(fi.ModTime())
	if pid, ok := readPIDFile(PIDFile(lock)); ok {
		f.PID, f.Unseen = pid, platform.ProcessGone(pid)
	}
	stale, why := rule.decide(f.Age, f.PID, f.Unseen)
	if stale {
		f.Stale, f.Reason = true, why
	} else {
		f.Wait = why
	}
	return f
}

// PIDFile is the holder file git writes beside lock: "x.lock" has "x~pid.lock".
func PIDFile(lock string) string { return strings.TrimSuffix(lock, ".lock") + "~pid.lock" }

func unseenHolder(pid int) string {
	return "its holder, process " + strconv.Itoa(pid) + " (from the ~pid.lock file), is not running here"
}

func tooOld(staleAfter time.Duration) string {
	return "it is older than the stale-after limit of " + staleAfter.String()
}

// Broken describes a stale lock that was removed.
type Broken struct {
	Lock    string        // the lock file removed
	PIDFile string        // its ~pid.lock, when that was removed too; "" otherwise
	Age     time.Duration // the lock's age when inspected
	PID     int           // the holder pid from the ~pid.lock file; 0 if there was none
	Reason  string        // why it was stale
}

// String is the one line refretry prints about the removal, without its "refretry: "
// prefix.
func (b Broken) String() string {
	what := "removed stale lock " + platform.ShellQuote(b.Lock)
	if b.PIDFile != "" {
		what += " and " + platform.ShellQuote(b.PIDFile)
	}
	facts := []string{"age " + b.Age.Round(time.Second).String()}
	if b.PID > 0 {
		facts = append(facts, "holder pid "+strconv.Itoa(b.PID))
	}
	return what + " (" + strings.Join(facts, ", ") + "): " + b.Reason + "; retrying"
}

// Reasons Break leaves a lock in place without it being live.
var (
	ErrGone    = errors.New("the lock is gone")
	ErrChanged = errors.New("the lock was replaced while it was inspected")
)

// NotStaleError is why Break refused to remove a lock: its holder may be alive.
type NotStaleError struct{ Reason string }

func (e *NotStaleError) Error() string { return "not removed: " + e.Reason }

// Break removes lock, and its ~pid.lock, if and only if it is still stale under rule
// when looked at again now: the ~pid.lock names a process that this pid namespace does
// not have and the lock is older than the rule's pid grace, or there is no live holder
// on record and the lock is older than the rule's stale-after limit. A ~pid.lock
// naming a running process always protects the lock, whatever its age. Just before each
// removal the file is looked up again and removed only if it is the very file inspected
// (same device, inode, size and modification time), so a lock that a new holder took
// meanwhile is never touched.
//
// It returns ErrGone when there is no lock any more (the contention is over),
// ErrChanged when a different file now holds the name, a *NotStaleError when the lock
// is not provably stale, and any other error when the removal failed.
func Break(lock string, rule Rule, now time.Time) (Broken, error) {
	v, err := Judge(lock, rule, now)
	if err != nil {
		return v.Broken, err
	}
	return v.Remove()
}

// Verdict is a lock judged stale, with what was seen of it and its ~pid.lock.
type Verdict struct {
	Broken
	lockInfo fs.FileInfo
	pidInfo  fs.FileInfo // nil when there was no ~pid.lock
	pidPath  string
}

// Judge is Break's first half: whether lock is stale now, and what it is.
func Judge(lock string, rule Rule, now time.Time) (Verdict, error) {
	b := Broken{Lock: lock}
	fi, err := os.Lstat(lock)
	if errors.Is(err, fs.ErrNotExist) {
		return Verdict{Broken: b}, ErrGone
	}
	if err != nil {
		return Verdict{Broken: b}, err
	}
	if !fi.Mode().IsRegular() {
		return Verdict{Broken: b}, &NotStaleError{Reason: "it is not a regular file"}
	}
	b.Age = now.Sub(fi.ModTime())
	pidPath := PIDFile(lock)
	pfi, _ := os.Lstat(pidPath)
	pid, hasPID := readPIDFile(pidPath)
	unseen := hasPID && platform.ProcessGone(pid)
	if hasPID && !unseen {
		return Verdict{Broken: b}, &NotStaleError{Reason: "its ~pid.lock names process " + strconv.Itoa(pid) + ", which is running"}
	}
	stale, why := rule.decide(b.Age, pid, unseen)
	switch {
	case !stale && why != "":
		return Verdict{Broken: b}, &NotStaleError{Reason: why}
	case !stale:
		return Verdict{Broken: b}, &NotStaleError{Reason: "its holder is not known to be gone and it is younger than the stale-after limit"}
	}
	if hasPID {
		b.PID = pid
	}
	b.Reason = why
	return Verdict{Broken: b, lockInfo: fi, pidInfo: pfi, pidPath: pidPath}, nil
}

// Remove is Break's second half: it removes the lock judged stale, and its ~pid.lock,
// if each is still the very file inspected.
func (v Verdict) Remove() (Broken, error) {
	b, lock, fi, pidPath, pfi := v.Broken, v.Lock, v.lockInfo, v.pidPath, v.pidInfo
	again, err := os.Lstat(lock)
	if errors.Is(err, fs.ErrNotExist) {
		return b, ErrGone
	}
	if err != nil {
		return b, err
	}
	if !sameFile(fi, again) {
		return b, ErrChanged
	}
	if err := os.Remove(lock); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return b, ErrGone
		}
		return b, fmt.Errorf("removing %s: %w", lock, err)
	}
	if pfi != nil {
		// The ~pid.lock goes only if it is still the one read above: a new holder
		// may already have taken the lock and written its own.
		if p2, err := os.Lstat(pidPath); err == nil && sameFile(pfi, p2) && os.Remove(pidPath) == nil {
			b.PIDFile = pidPath
		}
	}
	return b, nil
}

// readPIDFile reads git's "pid <n>" lock-holder file.
func readPIDFile(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	s, ok := strings.CutPrefix(string(bytes.TrimSpace(b)), "pid ")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(s)
	return pid, err == nil && pid > 0
}

// sameFile reports whether two stats are of the same, unchanged file.
func sameFile(a, b fs.FileInfo) bool {
	if !os.SameFile(a, b) || a.Size() != b.Size() || !a.ModTime().Equal(b.ModTime()) {
		return false
	}
	ac, aok := platform.ChangeTime(a)
	bc, bok := platform.ChangeTime(b)
	return aok == bok && ac.Equal(bc)
}

// TryBreak is Break for a caller about to retry: again is true when the lock was
// removed (removed says what went) or is no longer the stale file judged (gone, or
// taken by a new holder: plain contention again). Otherwise why says, in a few words,
// why the lock stays ("not removed: …", "could not remove it: …").
func TryBreak(lock string, rule Rule, now time.Time) (removed *Broken, again bool, why string) {
	b, err := Break(lock, rule, now)
	var ns *NotStaleError
	switch {
	case err == nil:
		return &b, true, ""
	case errors.Is(err, ErrGone), errors.Is(err, ErrChanged):
		return nil, true, ""
	case errors.As(err, &ns):
		return nil, false, ns.Error()
	}
	return nil, false, "could not remove it: " + err.Error()
}

// SamePath reports whether a and b name the same lock file: equal once cleaned (git
// writes "<gitdir>/./refs/heads/x.lock" in a bare repository entered by -C or cd, and
// "<worktree gitdir>/../../refs/…" in a linked worktree), or the same base name in the
// same directory reached by other names (symbolic links). The file itself need not
// exist: a lock is often gone by the time its message is read.
func SamePath(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	if filepath.Base(a) != filepath.Base(b) {
		return false
	}
	// The directories as given, not cleaned: the system resolves their ".." after
	// the links before them, as git did.
	da, errA := os.Stat(rawDir(a))
	db, errB := os.Stat(rawDir(b))
	return errA == nil && errB == nil && os.SameFile(da, db)
}

// rawDir is path's directory, not cleaned: "a/../b/x.lock" gives "a/../b".
func rawDir(path string) string {
	if i := strings.LastIndexAny(path, `/`+string(filepath.Separator)); i > 0 {
		return path[:i]
	}
	return "."
}
