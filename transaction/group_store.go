//go:build unix

package transaction

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// store is the hand-off between coalescing invocations: files under
// <commondir>/refretry/ (docs/coalescing.md has the protocol and its crash-safety
// argument). Every file that carries a decision is written whole to tmp/ and renamed
// into place, so a reader sees all of it or none of it.
//
//	pending/<id>        an invocation's update, waiting for a leader
//	claimed/<id>        taken by the leader into its group (renamed from pending/)
//	groups/<gid>        a group: its members and git's exact input, written before git starts
//	groups/<gid>.pid    the group's git (pid and start time), written right after it started
//	groups/<gid>.out    git's stdout ("commit: ok" means applied) and .err its stderr
//	done/<id>           an invocation's outcome: "ok" (and git's stderr) or "solo"
//	tmp/                files being written
//
// Only the holder of the line (an flock, see coalesce) claims, starts git, recovers or
// finishes groups; any invocation may add or withdraw its own pending file.
type store struct {
	dir string
	// fault, when set (tests only), is called at each step of a leader's work; an
	// error makes the leader stop on the spot, as if killed, leaving files as they are.
	fault func(step string) error
}

// Subdirectories of the store.
const (
	dirTmp     = "tmp"
	dirPending = "pending"
	dirClaimed = "claimed"
	dirGroups  = "groups"
	dirDone    = "done"
)

// Outcomes recorded in done/<id>.
const (
	outcomeOK   = "ok"   // applied; the rest of the file is git's stderr
	outcomeSolo = "solo" // not applied: run the update alone
)

// Housekeeping limits: nothing in the store outlives them.
const (
	doneMaxAge      = 5 * time.Minute  // outcomes nobody collected (the invocation died)
	tmpMaxAge       = 10 * time.Minute // temporary files, whatever their writer
	housekeepPeriod = time.Minute      // how often a leader looks
)

// pendingRecord is the content of pending/<id> (and claimed/<id>).
type pendingRecord struct {
	Key    string      `json:"key"`
	Proc   procID      `json:"proc"`
	Update groupUpdate `json:"update"`
}

// groupRecord is the content of groups/<gid>.
type groupRecord struct {
	Members []string `json:"members"`
	Input   string   `json:"input"` // git's whole stdin
	Leader  procID   `json:"leader"`
}

func (s *store) path(sub, name string) string { return filepath.Join(s.dir, sub, name) }

func (s *store) step(name string) error {
	if s.fault == nil {
		return nil
	}
	return s.fault(name)
}

// ensure creates the store's directories.
func (s *store) ensure() error {
	for _, d := range []string{dirTmp, dirPending, dirClaimed, dirGroups, dirDone} {
		if err := os.MkdirAll(filepath.Join(s.dir, d), 0o777); err != nil {
			return err
		}
	}
	return nil
}

// newID returns a fresh id that sorts by creation time.
func newID() string {
	return fmt.Sprintf("%019d-%d-%08x", time.Now().UnixNano(), os.Getpid(), rand.Uint32())
}

// idTime is when an id was made.
func idTime(id string) time.Time {
	ns, _, _ := strings.Cut(id, "-")
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// writeAtomic writes data to path through a file in tmp/ and a rename.
func (s *store) writeAtomic(path string, data []byte) error {
	me := self()
	tmp := s.path(dirTmp, fmt.Sprintf("%d-%d-%08x", me.PID, me.Start, rand.Uint32()))
	if err := os.WriteFile(tmp, data, 0o666); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// addPending publishes an invocation's update.
func (s *store) addPending(id string, rec pendingRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.writeAtomic(s.path(dirPending, id), b)
}

// withdraw takes an invocation's update back. It reports false when a leader has
// already claimed it: the invocation must then wait for its outcome.
func (s *store) withdraw(id string) (bool, error) {
	err := os.Remove(s.path(dirPending, id))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

func (s *store) isPending(id string) bool {
	_, err := os.Lstat(s.path(dirPending, id))
	return err == nil
}

// outcome reads done/<id>: what happened to the update, and for an applied one git's
// stderr. found is false while there is no outcome.
func (s *store) outcome(id string) (kind string, stderr []byte, found bool, err error) {
	b, err := os.ReadFile(s.path(dirDone, id))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, err
	}
	head, rest, _ := bytes.Cut(b, []byte("\n"))
	return string(head), rest, true, nil
}

func (s *store) removeOutcome(id string) { os.Remove(s.path(dirDone, id)) }

func (s *store) setOutcome(id, kind string, stderr []byte) error {
	return s.writeAtomic(s.path(dirDone, id), append([]byte(kind+"\n"), stderr...))
}

// pendingEntry is one pending update as a leader sees it.
type pendingEntry struct {
	ID string
	pendingRecord
}

// pending lists the pending updates, oldest first. Those of processes that no
// longer exist are removed: nobody is waiting for them.
func (s *store) pending(now time.Time) ([]pendingEntry, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, dirPending))
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	out := make([]pendingEntry, 0, len(names))
	for _, id := range names {
		b, err := os.ReadFile(s.path(dirPending, id))
		if err != nil {
			continue // withdrawn meanwhile
		}
		var rec pendingRecord
		if json.Unmarshal(b, &rec) != nil {
			os.Remove(s.path(dirPending, id))
			continue
		}
		// The signal test is cheap; /proc is read only for entries old enough for
		// their pid to have been reused.
		gone := !rec.Proc.quickAlive() || now.Sub(idTime(id)) > 2*time.Second && !rec.Proc.alive()
		if gone {
			os.Remove(s.path(dirPending, id))
			continue
		}
		out = append(out, pendingEntry{ID: id, pendingRecord: rec})
	}
	return out, nil
}

// claim moves a pending update into the leader's hands; false if it was withdrawn.
func (s *store) claim(id string) (bool, error) {
	err := os.Rename(s.path(dirPending, id), s.path(dirClaimed, id))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// unclaim returns a claimed update to pending: it was not applied.
func (s *store) unclaim(id string) error {
	err := os.Rename(s.path(dirClaimed, id), s.path(dirPending, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

func (s *store) writeGroup(gid string, rec groupRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return s.writeAtomic(s.path(dirGroups, gid), b)
}

func (s *store) writeGroupPID(gid string, p procID) error {
	return s.writeAtomic(s.path(dirGroups, gid+".pid"), []byte(p.String()+"\n"))
}

// dropGroup removes a group's files, the record first: without it the others are
// orphans that recovery deletes.
func (s *store) dropGroup(gid string) {
	os.Remove(s.path(dirGroups, gid))
	for _, ext := range []string{".pid", ".out", ".err"} {
		os.Remove(s.path(dirGroups, gid+ext))
	}
}

// committed reports whether git's stdout shows the transaction committed.
func committed(out []byte) bool {
	for _, line := range bytes.Split(out, []byte("\n")) {
		if string(line) == "commit: ok" {
			return true
		}
	}
	return false
}

// settle records the outcome of members whose group was applied, then removes their
// claims: an outcome is in place before the claim that recovery would act on goes.
func (s *store) settle(members []string, stderr []byte) error {
	for _, m := range members {
		if err := s.setOutcome(m, outcomeOK, stderr); err != nil {
			return err
		}
		if err := s.step("settle-one"); err != nil {
			return err
		}
	}
	if err := s.step("settled"); err != nil {
		return err
	}
	for _, m := range members {
		os.Remove(s.path(dirClaimed, m))
	}
	return s.step("unclaimed")
}

// solo records that a member's update was not applied and must run alone.
func (s *store) solo(id string) error {
	if err := s.setOutcome(id, outcomeSolo, nil); err != nil {
		return err
	}
	os.Remove(s.path(dirClaimed, id))
	return nil
}

// recover finishes what dead leaders left. It runs only in the line, where no live
// leader can be at work, so every group record and claim found belongs to one that
// died (or to no one). A group whose git never got its pid file written never got
// its input, so never committed; one whose git did is waited for, and its stdout
// decides. Applied members get their outcome; every other claim returns to pending.
func (s *store) recover(ctx context.Context) error {
	ents, err := os.ReadDir(filepath.Join(s.dir, dirGroups))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if len(ents) == 0 {
		return s.recoverClaims(nil)
	}
	var gids []string
	files := map[string]bool{}
	for _, e := range ents {
		if strings.Contains(e.Name(), ".") {
			files[e.Name()] = true
		} else {
			gids = append(gids, e.Name())
		}
	}
	slices.Sort(gids)
	applied := map[string][]byte{}
	for _, gid := range gids {
		b, err := os.ReadFile(s.path(dirGroups, gid))
		if err != nil {
			continue
		}
		var rec groupRecord
		if json.Unmarshal(b, &rec) != nil {
			continue
		}
		pb, err := os.ReadFile(s.path(dirGroups, gid+".pid"))
		if err != nil {
			continue // git never got the input: nothing applied
		}
		if p, ok := parseProcID(string(pb)); ok {
			if err := waitGone(ctx, p); err != nil {
				return err
			}
		}
		out, _ := os.ReadFile(s.path(dirGroups, gid+".out"))
		if !committed(out) {
			continue
		}
		errOut, _ := os.ReadFile(s.path(dirGroups, gid+".err"))
		for _, m := range rec.Members {
			applied[m] = errOut
		}
	}
	for m, errOut := range applied {
		if _, _, found, _ := s.outcome(m); !found {
			if err := s.setOutcome(m, outcomeOK, errOut); err != nil {
				return err
			}
		}
		os.Remove(s.path(dirClaimed, m))
	}
	if err := s.recoverClaims(applied); err != nil {
		return err
	}
	for _, gid := range gids {
		s.dropGroup(gid)
	}
	for name := range files {
		base, _, _ := strings.Cut(name, ".")
		if !slices.Contains(gids, base) {
			os.Remove(s.path(dirGroups, name))
		}
	}
	return nil
}

// recoverClaims returns to pending every claim that has no outcome.
func (s *store) recoverClaims(applied map[string][]byte) error {
	ents, err := os.ReadDir(filepath.Join(s.dir, dirClaimed))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	for _, e := range ents {
		id := e.Name()
		if _, ok := applied[id]; ok {
			os.Remove(s.path(dirClaimed, id))
			continue
		}
		if _, _, found, _ := s.outcome(id); found {
			os.Remove(s.path(dirClaimed, id))
			continue
		}
		if err := s.unclaim(id); err != nil {
			return err
		}
	}
	return nil
}

// waitGone waits until a process has exited. Polling is the only way to wait for a
// process that is not one's child.
func waitGone(ctx context.Context, p procID) error {
	delay := time.Millisecond
	for p.alive() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 50*time.Millisecond)
	}
	return nil
}

// moved records that a leader finished a group: the line is moving.
func (s *store) moved() {
	now := time.Now()
	if os.Chtimes(filepath.Join(s.dir, "moved"), now, now) != nil {
		if f, err := os.Create(filepath.Join(s.dir, "moved")); err == nil {
			f.Close()
		}
	}
}

// movedWithin reports whether a leader finished a group within d.
func (s *store) movedWithin(d time.Duration) bool {
	fi, err := os.Stat(filepath.Join(s.dir, "moved"))
	return err == nil && time.Since(fi.ModTime()) < d
}

// housekeep removes, at most once per housekeepPeriod, outcomes nobody collected and
// temporary files of writers that are gone.
func (s *store) housekeep(now time.Time) {
	stamp := filepath.Join(s.dir, "housekeeping")
	if fi, err := os.Stat(stamp); err == nil && now.Sub(fi.ModTime()) < housekeepPeriod {
		return
	}
	if f, err := os.Create(stamp); err == nil {
		f.Close()
	}
	if ents, err := os.ReadDir(filepath.Join(s.dir, dirDone)); err == nil {
		for _, e := range ents {
			if fi, err := e.Info(); err == nil && now.Sub(fi.ModTime()) > doneMaxAge {
				os.Remove(s.path(dirDone, e.Name()))
			}
		}
	}
	if ents, err := os.ReadDir(filepath.Join(s.dir, dirTmp)); err == nil {
		for _, e := range ents {
			pid, rest, _ := strings.Cut(e.Name(), "-")
			start, _, _ := strings.Cut(rest, "-")
			p, ok := parseProcID(pid + " " + start)
			fi, err := e.Info()
			old := err == nil && now.Sub(fi.ModTime()) > tmpMaxAge
			if old || !ok || !p.alive() {
				os.Remove(s.path(dirTmp, e.Name()))
			}
		}
	}
}
