package gitea

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
)

// writeOptions writes what opts asks of the instance beyond the defaults: signing the
// commits its API makes with opts.SigningKey, and opts.GitConfig for its git.
func writeOptions(p func(string, ...any), opts Options) {
	if opts.SigningKey != "" {
		p("\n[repository.signing]")
		p("SIGNING_KEY = %s", opts.SigningKey)
		p("SIGNING_FORMAT = ssh")
		p("SIGNING_NAME = Gitea")
		p("SIGNING_EMAIL = gitea@example.invalid")
		p("CRUD_ACTIONS = always")
	}
	if len(opts.GitConfig) > 0 {
		p("\n[git.config]")
		keys := make([]string, 0, len(opts.GitConfig))
		for k := range opts.GitConfig {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			p("%s = %s", k, opts.GitConfig[k])
		}
	}
}

// quietCron are the cron tasks Gitea 1.26 enables by default (with Actions off): all
// turned off, so nothing runs in the background of a test. ([cron] ENABLED, which
// older releases read, is no longer looked at.)
var quietCron = []string{
	"update_mirrors", "repo_health_check", "check_repo_stats", "archive_cleanup",
	"sync_external_users", "deleted_branches_cleanup", "update_migration_poster_id",
	"cleanup_hook_task_table", "cleanup_packages", "update_checker",
}

// appINI is the configuration of an instance in dir, serving HTTP on the Unix socket
// at socket, reached by clients at rootURL, running the git at git, signing its API's
// commits with the SSH key opts.SigningKey when that is not empty, with opts.GitConfig
// in the git config it runs git with.
func appINI(dir, git, socket, rootURL string, opts Options) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("APP_NAME = refretry test Gitea")
	p("RUN_MODE = prod")
	p("WORK_PATH = %s", dir)
	if u, err := user.Current(); err == nil && u.Username != "" {
		p("RUN_USER = %s", u.Username)
	}
	if os.Getuid() == 0 {
		p("I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true")
	}
	p("\n[server]")
	p("PROTOCOL = http+unix")
	p("HTTP_ADDR = %s", socket)
	p("UNIX_SOCKET_PERMISSION = 600")
	p("ROOT_URL = %s", rootURL)
	p("APP_DATA_PATH = %s", filepath.Join(dir, "data"))
	p("DISABLE_SSH = true")
	p("START_SSH_SERVER = false")
	p("LFS_START_SERVER = false")
	p("OFFLINE_MODE = true")
	p("\n[database]")
	p("DB_TYPE = sqlite3")
	p("PATH = %s", filepath.Join(dir, "data", "gitea.db"))
	// Concurrent pushes write through the hooks' internal API at once: wait for
	// SQLite's lock rather than fail a hook with "database is locked".
	p("SQLITE_JOURNAL_MODE = WAL")
	p("SQLITE_TIMEOUT = 20000")
	p("\n[security]")
	p("INSTALL_LOCK = true")
	p("\n[service]")
	p("DISABLE_REGISTRATION = true")
	p("\n[repository]")
	p("ROOT = %s", filepath.Join(dir, "repos"))
	p("DEFAULT_BRANCH = main")
	p("\n[git]")
	p("PATH = %s", git)
	writeOptions(p, opts)
	p("\n[log]")
	p("MODE = console")
	p("LEVEL = Info")
	p("ROOT_PATH = %s", filepath.Join(dir, "log"))
	p("\n[mailer]")
	p("ENABLED = false")
	p("\n[cron]")
	p("ENABLED = false")
	for _, task := range quietCron {
		p("\n[cron.%s]", task)
		p("ENABLED = false")
		p("RUN_AT_START = false")
	}
	p("\n[indexer]")
	p("ISSUE_INDEXER_TYPE = db")
	p("REPO_INDEXER_ENABLED = false")
	p("\n[session]")
	p("PROVIDER = memory")
	p("\n[actions]")
	p("ENABLED = false")
	p("\n[packages]")
	p("ENABLED = false")
	p("\n[oauth2]")
	p("ENABLED = false")
	return b.String()
}
