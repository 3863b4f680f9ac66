package shim

import "slices"

// builtins are the commands git runs in its own process: the union of
// `git --list-cmds=builtins` of git 2.39 and git 2.55 (TestShimBuiltinsCoverGit checks
// that every git the tests run lists nothing else). The shim hands them to the real git
// without looking for a git-<name> program, so that the common call costs no process;
// a name that is a builtin in one of those versions and a script in the other (2.39's
// bisect) goes to git too, as it always did.
//
// A slice, searched when the shim meets a command that is neither update-ref, fetch nor
// push: a map would be built at every refretry's start-up, whatever its command.
var builtinNames = []string{
	"add", "am", "annotate", "apply", "archive", "backfill", "bisect", "bisect--helper", "blame", "branch",
	"bugreport", "bundle", "cat-file", "check-attr", "check-ignore", "check-mailmap", "check-ref-format",
	"checkout", "checkout--worker", "checkout-index", "cherry", "cherry-pick", "clean", "clone", "column",
	"commit", "commit-graph", "commit-tree", "config", "count-objects", "credential", "credential-cache",
	"credential-cache--daemon", "credential-store", "describe", "diagnose", "diff", "diff-files", "diff-index",
	"diff-pairs", "diff-tree", "difftool", "env--helper", "fast-export", "fast-import", "fetch", "fetch-pack",
	"fmt-merge-msg", "for-each-ref", "for-each-repo", "format-patch", "format-rev", "fsck", "fsck-objects",
	"fsmonitor--daemon", "gc", "get-tar-commit-id", "grep", "hash-object", "help", "history", "hook", "index-pack",
	"init", "init-db", "interpret-trailers", "last-modified", "log", "ls-files", "ls-remote", "ls-tree", "mailinfo",
	"mailsplit", "maintenance", "merge", "merge-base", "merge-file", "merge-index", "merge-ours", "merge-recursive",
	"merge-recursive-ours", "merge-recursive-theirs", "merge-subtree", "merge-tree", "mktag", "mktree",
	"multi-pack-index", "mv", "name-rev", "notes", "pack-objects", "pack-redundant", "pack-refs", "patch-id",
	"pickaxe", "prune", "prune-packed", "pull", "push", "range-diff", "read-tree", "rebase", "receive-pack", "reflog",
	"refs", "remote", "remote-ext", "remote-fd", "repack", "replace", "replay", "repo", "rerere", "reset", "restore",
	"rev-list", "rev-parse", "revert", "rm", "send-pack", "shortlog", "show", "show-branch", "show-index", "show-ref",
	"sparse-checkout", "stage", "stash", "status", "stripspace", "submodule--helper", "switch", "symbolic-ref", "tag",
	"unpack-file", "unpack-objects", "update-index", "update-ref", "update-server-info", "upload-archive",
	"upload-archive--writer", "upload-pack", "url-parse", "var", "verify-commit", "verify-pack", "verify-tag",
	"version", "whatchanged", "worktree", "write-tree",
}

// builtin reports whether git runs the command name in its own process.
func builtin(name string) bool { return slices.Contains(builtinNames, name) }
