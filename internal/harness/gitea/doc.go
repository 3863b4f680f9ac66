// Package gitea runs a throwaway Gitea (v1.26.0, built by scripts/gitea.sh) on
// loopback ports, for tests and benchmarks that need a real forge's push behaviour:
// its hooks, its branch protection, its messages. It is test support, not product.
//
// The contract:
//
//   - Binary is the Gitea binary named by REFRETRY_GITEA, else the one scripts/gitea.sh
//     caches (${XDG_CACHE_HOME:-$HOME/.cache}/refretry/gitea-v1.26.0/gitea) when it is
//     there. Nothing here builds Gitea: that takes minutes, and belongs to
//     `scripts/gitea.sh build`. Need skips a test with one line when there is no
//     binary, and fails it when the binary it finds does not run or is another
//     version.
//   - Start makes a temporary directory holding everything of the instance (app.ini,
//     SQLite database, repositories, logs, Gitea's git HOME), writes a local,
//     quiet configuration (no SSH, no mail, no cron tasks, no Actions, no packages,
//     offline), runs `gitea migrate` and `gitea admin user create --admin`, then
//     `gitea web` with its output in the directory's gitea.log, and waits (bounded)
//     until /api/v1/version answers. A failure's error carries the end of the log.
//     Gitea serves HTTP on a Unix socket in the directory (PROTOCOL http+unix), not
//     on a TCP port: no other process can take it, whereas a port chosen free may be
//     taken before Gitea listens (Gitea then hangs rather than exits, and a probe
//     of the port may reach someone else's server). Its hooks reach its internal API
//     through the same socket.
//   - Gitea's server side runs the git of Options.Git (its `[git] PATH`, and the
//     first directory of its PATH). Gitea and everything it starts get the caller's
//     environment without GIT_*, GITEA_*, REFRETRY_*, a CI's variables, HOME and the
//     locale (see internal/harness/hermetic), with HOME in the instance's directory.
//   - Clients talk to a reverse proxy on a free port of 127.0.0.1 (its listener is
//     made first and kept, and is Gitea's ROOT_URL), in front of Gitea: URL hands out its clone URLs, with the admin's credentials in them. The
//     proxy counts the POSTs to git-receive-pack (Pushes: one per push that reached
//     receive-pack) and to git-upload-pack (UploadPacks: a protocol v2 fetch makes
//     one for ls-refs and one or more for the fetch). The 4-byte probe git sends
//     before a pack larger than http.postBuffer is not counted. Requests counts every
//     request the proxy received. Options.Latency delays each of them by a round trip
//     (internal/harness/latency): a benchmark's model of a forge across a network.
//   - HoldPushes(n) makes the proxy hold the next n receive-pack POSTs until the n-th
//     has arrived and then let them go together: every one of those pushes has read
//     the same old value before any of them updates, so a lost race is reproduced
//     deterministically, on the server. Held POSTs also go on when their client goes
//     away, when the instance is closed, or after two minutes.
//   - The API helpers (CreateRepo, ProtectBranch, API) talk to Gitea directly, as the
//     admin, with basic auth. RepoPath is a repository's bare directory on disk. Bot
//     makes a user who is not an admin, a writer of a repository, and a token of
//     theirs: a CI job's bot account, to whom Gitea answers as it answers users (it
//     withholds a 500's message from them).
//   - Options.SigningKey (an SSH private key file) makes the instance sign the
//     commits its API makes ([repository.signing] CRUD_ACTIONS = always);
//     Options.GitConfig is git config for the git Gitea runs ([git.config]).
//   - Close stops Gitea (SIGTERM, a bounded wait, then SIGKILL of its process group)
//     and the proxy, and removes the directory. It is safe to call more than once.
//
// Start has no process-wide side effects beyond its child processes, and several
// instances run at once without sharing anything. Nothing here needs a *testing.T
// except Need, so a benchmark uses it as a test does.
package gitea
