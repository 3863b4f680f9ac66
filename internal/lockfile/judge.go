package lockfile

import (
	"fmt"
	"strings"
	"time"

	"github.com/refretry/refretry/failure"
	"github.com/refretry/refretry/internal/platform"
)

// Look fills in what the file system says now about the lock l names, under rule
// (Inspect): its age, the holder pid from a ~pid.lock file and whether that pid runs
// here, why an unseen holder is still waited for, and whether the lock counts as stale.
// It reports whether l is stale. A lock that has disappeared meanwhile is left as it
// is: it was contention, and it is over.
func Look(l *failure.Lock, rule Rule, now time.Time) bool {
	if l.Path == "" {
		return l.Stale
	}
	f := Inspect(l.Path, rule, now)
	if !f.Present {
		return l.Stale
	}
	l.Age = f.Age
	if f.PID > 0 {
		// The file is read now; git's advice (which the classifier read) may be older.
		l.PID, l.HolderUnseen, l.PIDFile = f.PID, f.Unseen, PIDFile(l.Path)
	}
	l.Waiting = f.Wait
	if !l.Stale && f.Stale {
		l.Stale, l.StaleReason = true, f.Reason
	}
	return l.Stale
}

// Remove removes the stale lock l names if it still is stale under rule and is still
// the very file judged (TryBreak). again is true when the lock is contention again:
// removed (b says what went), or gone or taken by a new holder meanwhile; l is then no
// longer stale. Otherwise l stays stale, and its StaleReason says why the lock stays.
// Only a file named "*.lock" is ever removed.
func Remove(l *failure.Lock, rule Rule, now time.Time) (b *Broken, again bool) {
	if l.Path == "" || !strings.HasSuffix(l.Path, ".lock") {
		return nil, false
	}
	b, again, why := TryBreak(l.Path, rule, now)
	if !again {
		l.StaleReason += " (" + why + ")"
		return nil, false
	}
	l.Stale, l.StaleReason = false, ""
	return b, true
}

// Advice is refretry's line about a lock that ended a run: for a stale lock, whose it
// is, how old, why it is stale and how to remove it; for a held lock whose holder pid
// is not running here, why it was still waited for; "" for any other.
func Advice(l *failure.Lock) string {
	switch {
	case l.Stale:
		msg := "stale lock " + l.Path + facts(l) + ": " + l.StaleReason
		if l.Path != "" {
			msg += "; make sure no git process is using this repository, then remove it: rm -f " + platform.ShellQuote(l.Path)
			if l.PIDFile != "" {
				msg += " " + platform.ShellQuote(l.PIDFile)
			}
		}
		return msg
	case l.Waiting != "":
		return "lock " + l.Path + facts(l) + ": " + l.Waiting
	}
	return ""
}

// facts is " (age …, holder pid …)", with what is known; "" when nothing is.
func facts(l *failure.Lock) string {
	var fs []string
	if l.Age > 0 {
		fs = append(fs, "age "+l.Age.Round(time.Second).String())
	}
	if l.PID > 0 {
		fs = append(fs, fmt.Sprintf("holder pid %d", l.PID))
	}
	if len(fs) == 0 {
		return ""
	}
	return " (" + strings.Join(fs, ", ") + ")"
}
