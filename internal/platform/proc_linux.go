package platform

import (
	"os"
	"strings"
)

// Umask is this process's umask as /proc reports it ("0022"), "" when it cannot be
// read: setting the umask to learn it would change it, for a moment, for the whole
// process.
func Umask() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "Umask:"); ok {
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
