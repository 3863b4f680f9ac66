package testutil

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/refretry/refretry/internal/harness/hermetic"
)

// NoMaintenanceEnv is the environment git runs in for a test's repository whose home
// is root (hermetic.Env), with a global configuration written there that starts no
// automatic maintenance: none after a commit or a fetch (maintenance.auto), none on a
// server after a push it received (receive.autoGC; over file:// the server's
// receive-pack runs in the pushing client's environment). In repositories of a few
// commits it finds nothing to do, and each one is another git started: about one in
// ten of the processes a push test starts.
func NoMaintenanceEnv(t testing.TB, root string) []string {
	t.Helper()
	config := "[maintenance]\n\tauto = false\n[receive]\n\tautoGC = false\n"
	if err := os.WriteFile(filepath.Join(root, ".gitconfig"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	return hermetic.Env(os.Environ(), root)
}

// NoLockWaitEnv turns git's own wait for a held lock off, on both backends, for a test
// that holds one on purpose and checks what refretry does after the failed attempt:
// refretry gives git a 1 s wait through GIT_CONFIG_COUNT, and git prefers a
// command-line setting (GIT_CONFIG_PARAMETERS) to it.
const NoLockWaitEnv = "GIT_CONFIG_PARAMETERS='core.filesreflocktimeout'='0' 'reftable.locktimeout'='0'"
