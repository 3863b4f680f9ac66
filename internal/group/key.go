//go:build linux

package group

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/refretry/refretry/internal/platform"
)

// keyEnv lists the environment variables, besides every GIT_*, that can change what
// git writes or how: which configuration it reads, the reflog identity and time zone,
// what hooks find on PATH.
var keyEnv = []string{"HOME", "XDG_CONFIG_HOME", "EMAIL", "TZ", "PATH", "USER", "LOGNAME"}

// key is what invocations must share for one git to act for all of them: the
// repository and its ref store (by path, and the mount namespace the paths are read in), the working
// directory and -C directories (relative paths in the environment are read from
// there), the git executable, the user and umask, whether coalescing was asked for
// or is the default, and the environment git reads. Invocations with different keys
// are never grouped. (Their command-line options may differ: a leader gives each set
// of options a git of its own.)
func key(c *Config) string {
	h := sha256.New()
	field := func(s string) {
		h.Write([]byte(strconv.Itoa(len(s))))
		h.Write([]byte{':'})
		h.Write([]byte(s))
	}
	field("refretry-group-v2")
	field(strconv.FormatBool(c.Default))
	field(c.GitDir)
	field(c.CommonDir)
	field(c.Store.Format)
	field(c.Store.Dir)
	field(c.Store.WorktreeDir)
	field(c.Git)
	field(strings.Join(c.Dirs, "\x00"))
	wd, _ := os.Getwd()
	field(wd)
	field(strconv.Itoa(os.Getuid()))
	field(platform.Umask())
	field(platform.MountNamespace())
	// The last value of a variable wins, as for getenv.
	vals := map[string]string{}
	for _, kv := range c.Env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_") || slices.Contains(keyEnv, k) {
			vals[k] = v
		}
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		field(k)
		field(vals[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// envKey identifies the whole environment: where a reference-transaction hook runs,
// the hook sees the leader's environment, so every variable must match.
func envKey(env []string) string {
	vals := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vals[k] = v // the last value wins, as for getenv
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k + "=" + vals[k] + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// rendezvousName is where the invocations of one user on one ref store meet: it
// names the store's directory (the common directory, unless the refs live
// elsewhere) by its device and inode, which no other store shares, whatever path
// reaches it.
func rendezvousName(storeDir string) (string, bool) {
	fi, err := os.Stat(storeDir)
	if err != nil {
		return "", false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	sum := sha256.Sum256([]byte(strconv.FormatUint(uint64(st.Dev), 10) + ":" +
		strconv.FormatUint(uint64(st.Ino), 10) + ":" + strconv.Itoa(os.Getuid())))
	return "refretry/group/v2/" + hex.EncodeToString(sum[:16]), true
}

// traced reports whether env asks git for trace output, which goes to the stderr of
// whichever git runs: such invocations are not grouped.
func traced(env []string) bool {
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "GIT_TRACE") && v != "" && v != "0" && !strings.EqualFold(v, "false") {
			return true
		}
	}
	return false
}
