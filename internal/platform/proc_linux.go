package platform

import (
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// Umask is this process's umask as /proc reports it ("0022"), "" when it cannot be
// read: setting the umask to learn it would change it, for a moment, for the whole
// process. The file is read with plain system calls: os.ReadFile would offer it to
// the runtime's poller, which would set the poller up (two descriptors, and a look
// at them by the runtime every few milliseconds from then on) in a process that
// polls nothing else.
func Umask() string {
	fd, err := unix.Open("/proc/self/status", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	// "Umask:" is the second line (Linux 4.7 and later), after "Name:" and at most
	// 64 bytes of name: one small read holds it, and the buffer stays on the stack.
	var buf [256]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil || n <= 0 {
		return ""
	}
	for line := range strings.Lines(string(buf[:n])) {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok && strings.HasSuffix(v, "\n") {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// MountNamespace names this process's mount namespace ("mnt:[4026531841]"), "" when
// it cannot be read. Processes that share it read paths the same way.
func MountNamespace() string {
	ns, _ := os.Readlink("/proc/self/ns/mnt")
	return ns
}
