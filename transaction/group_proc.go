//go:build unix

package transaction

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// procID names a process across pid reuse: its pid and its start time (field 22 of
// /proc/<pid>/stat, in clock ticks since boot; 0 when /proc cannot say).
type procID struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start,omitempty"`
}

func (p procID) String() string {
	return strconv.Itoa(p.PID) + " " + strconv.FormatUint(p.Start, 10)
}

func parseProcID(s string) (procID, bool) {
	a, b, _ := strings.Cut(strings.TrimSpace(s), " ")
	pid, err := strconv.Atoi(a)
	if err != nil || pid <= 0 {
		return procID{}, false
	}
	start, _ := strconv.ParseUint(b, 10, 64)
	return procID{PID: pid, Start: start}, true
}

// self is this process.
var self = sync.OnceValue(func() procID {
	pid := os.Getpid()
	start, _, _ := procStat(pid)
	return procID{PID: pid, Start: start}
})

func procOf(pid int) procID {
	start, _, _ := procStat(pid)
	return procID{PID: pid, Start: start}
}

// procStat reads a process's start time and state letter from /proc/<pid>/stat.
func procStat(pid int) (start uint64, state byte, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// The command name, field 2, is in parentheses and may contain anything.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 (starttime) is f[19].
	if len(f) < 20 {
		return 0, 0, false
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, 0, false
	}
	return start, f[0][0], true
}

// alive reports whether the process is still running: it exists, is not a zombie
// waiting to be reaped, and, when its start time is known, is the same process and
// not a later one that got its pid.
func (p procID) alive() bool {
	if p.PID <= 0 {
		return false
	}
	start, state, ok := procStat(p.PID)
	if !ok {
		// No /proc (or the process is gone): fall back to the signal test.
		err := syscall.Kill(p.PID, 0)
		return err == nil || errors.Is(err, syscall.EPERM)
	}
	if state == 'Z' || state == 'X' {
		return false
	}
	return p.Start == 0 || start == p.Start
}

// quickAlive is alive without reading /proc: a signal test only. It cannot see pid
// reuse; callers use it where a wrong "alive" costs only a delay.
func (p procID) quickAlive() bool {
	err := syscall.Kill(p.PID, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
