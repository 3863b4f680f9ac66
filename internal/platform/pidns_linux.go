package platform

import (
	"os"
	"sync"
)

// initPIDNamespace is how /proc/self/ns/pid names the system's initial pid namespace:
// its inode number is fixed (PROC_PID_INIT_INO, since Linux 3.8).
const initPIDNamespace = "pid:[4026531836]"

var ownPIDNamespace = sync.OnceValue(func() bool {
	ns, err := os.Readlink("/proc/self/ns/pid")
	return err == nil && ns != initPIDNamespace
})

// OwnPIDNamespace reports whether this process runs in a pid namespace other than
// the system's initial one, as a container's processes do. Processes of other
// containers, and of the host, are then invisible to it: a pid that one of them
// wrote down names another process here, or none. false when it cannot tell.
func OwnPIDNamespace() bool { return ownPIDNamespace() }
