#!/usr/bin/env bash
# capture-fixtures.sh: regenerate the corpus of real `git update-ref` failures in
# testdata/stderr/ (one txtar file per case) by running two real git binaries.
#
# Usage: scripts/capture-fixtures.sh <git-2.55> <git-2.39> <outdir>
#   e.g. scripts/capture-fixtures.sh "$(scripts/get-git.sh)" /usr/bin/git testdata/stderr
#
# Every fixture is captured from a real run: stdout, stderr and the exit code are written
# byte for byte. Each case also states the exit code and a fixed string it expects to see;
# if real git disagrees the script stops with an error instead of writing a mislabelled
# fixture.
#
# Determinism: fixed author/committer identity and dates (stable object ids), LC_ALL=C with
# LANGUAGE unset, HOME pointing at an empty temporary config, GIT_CONFIG_NOSYSTEM=1, every
# inherited GIT_* variable removed, and all repositories created at the same path
# (/tmp/refretry-fixtures/r, recreated for every case), so absolute paths in messages are
# stable. Live lock holders are "pid 1" and dead ones a pid that can never exist
# (4194304 = PID_MAX_LIMIT on 64-bit Linux); only the *-reaped-pid fixture names a
# real, reaped process id and so differs from run to run.
#
# The output directory is emptied of *.txtar files first, then refilled.
set -euo pipefail

usage() {
	echo "usage: $0 <git-2.55> <git-2.39> <outdir>" >&2
	exit 2
}
[ $# -eq 3 ] || usage
GIT55=$1
GIT39=$2
OUT=$3

die() {
	printf 'capture-fixtures: FAILED: %s\n' "$*" >&2
	exit 1
}

for g in "$GIT55" "$GIT39"; do
	[ -x "$g" ] || die "not an executable: $g"
done
case "$GIT55" in /*) ;; *) GIT55=$(cd "$(dirname "$GIT55")" && pwd)/$(basename "$GIT55") ;; esac
case "$GIT39" in /*) ;; *) GIT39=$(cd "$(dirname "$GIT39")" && pwd)/$(basename "$GIT39") ;; esac
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# ---------------------------------------------------------------------------------------
# Environment.
while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep '^GIT_' || true)
unset LANGUAGE LANG LC_MESSAGES XDG_CONFIG_HOME EDITOR VISUAL PAGER || true
export LC_ALL=C
export TZ=UTC

ROOT=/tmp/refretry-fixtures
[ -L "$ROOT" ] && die "$ROOT is a symlink; refusing to use it"
exec 9>"$ROOT.lock"
flock -n 9 || die "another capture-fixtures.sh run holds $ROOT.lock"
rm -rf "$ROOT"
mkdir -p "$ROOT/home" "$ROOT/tpl" "$ROOT/q"
: >"$ROOT/home/.gitconfig"
export HOME="$ROOT/home"
export XDG_CONFIG_HOME="$HOME/.config"
export GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME='Fixture Author' GIT_AUTHOR_EMAIL='author@example.invalid'
export GIT_COMMITTER_NAME='Fixture Committer' GIT_COMMITTER_EMAIL='committer@example.invalid'
export GIT_AUTHOR_DATE='1700000000 +0000' GIT_COMMITTER_DATE='1700000000 +0000'
export GIT_TERMINAL_PROMPT=0
cleanup() { rm -rf "$ROOT"; }
trap cleanup EXIT

R="$ROOT/r"         # the repository every case runs in (recreated per case)
IN="$ROOT/stdin"    # stdin of the command under test
ZERO=0000000000000000000000000000000000000000
NONEX=1111111111111111111111111111111111111111
LIVEPID=1           # always alive
DEADPID=4194304     # > PID_MAX_LIMIT on 64-bit Linux: never a live process
kill -0 "$LIVEPID" 2>/dev/null || [ -d /proc/1 ] || die "pid $LIVEPID is not alive here"
if kill -0 "$DEADPID" 2>/dev/null; then die "pid $DEADPID is alive?"; fi

# Lock-wait knobs that make a held lock fail at once (the message does not change; the
# *-default-timeout fixtures prove it).
FAST55=(-c core.filesRefLockTimeout=0 -c core.packedRefsTimeout=0 -c reftable.lockTimeout=0)
FAST39=(-c core.filesRefLockTimeout=0 -c core.packedRefsTimeout=0)

rm -f "$OUT"/*.txtar
COUNT=0

# ---------------------------------------------------------------------------------------
# Per-version state (set by use_version / use_backend).
GIT='' VER='' VERFULL='' BACKEND='' FAST=()
use_version() {
	GIT=$1
	VERFULL=$("$GIT" version | sed -n 's/^git version \([0-9][0-9.]*\).*/\1/p')
	[ -n "$VERFULL" ] || die "cannot read the version of $GIT"
	VER=$(printf '%s' "$VERFULL" | cut -d. -f1,2)
	case "$VER" in
	2.55) FAST=("${FAST55[@]}") ;;
	2.39) FAST=("${FAST39[@]}") ;;
	*) die "unexpected git version $VERFULL from $GIT (want 2.55 and 2.39)" ;;
	esac
}
is55() { [ "$VER" = 2.55 ]; }
is39() { [ "$VER" = 2.39 ]; }
isrt() { [ "$BACKEND" = reftable ]; }
isfiles() { [ "$BACKEND" = files ]; }

g() { (cd "$R" && "$GIT" "$@"); } # setup helper: must succeed

# Template repository per version/backend: commits A <- B <- C (empty tree), a blob,
# HEAD -> refs/heads/main = A, refs/heads/x = A, refs/heads/y = A.
A='' B='' C='' T='' BLOB=''
make_template() {
	local tpl="$ROOT/tpl/$VER-$BACKEND"
	if isrt; then
		"$GIT" init -q -b main --ref-format=reftable "$tpl"
	elif is55; then
		"$GIT" init -q -b main --ref-format=files "$tpl"
	else
		"$GIT" init -q -b main "$tpl"
	fi
	(
		cd "$tpl"
		t=$("$GIT" mktree </dev/null)
		a=$("$GIT" commit-tree -m A "$t")
		b=$("$GIT" commit-tree -p "$a" -m B "$t")
		c=$("$GIT" commit-tree -p "$b" -m C "$t")
		blob=$(printf 'blob\n' | "$GIT" hash-object -w --stdin)
		"$GIT" update-ref -m setup refs/heads/main "$a"
		"$GIT" update-ref -m setup refs/heads/x "$a"
		"$GIT" update-ref -m setup refs/heads/y "$a"
		printf '%s %s %s %s %s\n' "$t" "$a" "$b" "$c" "$blob" >"$ROOT/tpl/$VER-$BACKEND.oids"
	)
	read -r T A B C BLOB <"$ROOT/tpl/$VER-$BACKEND.oids"
	TPL=$tpl
}
use_backend() {
	BACKEND=$1
	make_template
}
fresh() {
	rm -rf "$R"
	cp -a "$TPL" "$R"
	rm -f "$IN"
	: >"$IN"
	HAVE_IN=
}

# stdin builders: text lines (LF added), NUL-terminated fields, raw bytes (printf format).
line() { printf '%s\n' "$1" >>"$IN"; HAVE_IN=1; }
field() { printf '%s\0' "$1" >>"$IN"; HAVE_IN=1; }
raw() { printf "$1" >>"$IN"; HAVE_IN=1; } # $1 is a printf format on purpose

# Render the stdin bytes as a printf argument for the informational command line.
render_input() {
	local s='' b
	for b in $(od -An -v -tx1 "$IN"); do
		case "$b" in
		0a) s+='\n' ;; 00) s+='\000' ;; 0d) s+='\r' ;; 09) s+='\t' ;;
		5c) s+='\\' ;; 27) s+="'\\''" ;; 25) s+='%%' ;;
		*)
			if [ $((16#$b)) -ge 32 ] && [ $((16#$b)) -lt 127 ]; then
				s+=$(printf "\\x$b")
			else
				s+=$(printf '\\%03o' $((16#$b)))
			fi
			;;
		esac
	done
	printf "printf '%s' | " "$s"
}

ENVS=() # extra environment for the command under test (VAR=value ...)

# cap NAME FORM CLASS RETRY EXIT EXPECT NOTE -- GIT-ARGS...
#   Runs "$GIT GIT-ARGS..." in $R (stdin from the builders, else /dev/null), checks that
#   the exit code is EXIT and that EXPECT (fixed string) occurs in stdout or stderr, and
#   writes $OUT/<ver>-<backend>-NAME.txtar.
cap() {
	local name=$1 form=$2 class=$3 retry=$4 want=$5 expect=$6 note=$7
	shift 7
	[ "$1" = -- ] || die "cap $name: missing --"
	shift
	local file="$OUT/$VER-$BACKEND-$name.txtar"
	[ -e "$file" ] && die "duplicate fixture $file"
	local so="$ROOT/out.stdout" se="$ROOT/out.stderr" rc=0 stdin=/dev/null desc=''
	[ -n "$HAVE_IN" ] && stdin=$IN
	if [ -n "$HAVE_IN" ]; then
		desc=$(render_input)
		eval "${desc% | }" | cmp -s - "$IN" || die "$name: rendered stdin does not reproduce the input"
	fi
	[ ${#ENVS[@]} -gt 0 ] && desc+="${ENVS[*]} "
	desc+="git$(printf ' %q' "$@")"
	(cd "$R" && env "${ENVS[@]}" timeout 60 "$GIT" "$@") <"$stdin" >"$so" 2>"$se" || rc=$?
	ENVS=()
	if [ "$rc" != "$want" ]; then
		cat "$so" "$se" >&2
		die "$VER-$BACKEND-$name: exit $rc, expected $want"
	fi
	if [ -z "$expect" ] || ! cat "$so" "$se" | grep -qF -- "$expect"; then
		cat "$so" "$se" >&2
		die "$VER-$BACKEND-$name: output lacks: $expect"
	fi
	if grep -qE '^-- .* --$' "$so" "$se"; then
		die "$VER-$BACKEND-$name: output contains a txtar marker line"
	fi
	{
		printf 'command: %s\n' "$desc"
		printf 'git: %s\n' "$VERFULL"
		printf 'backend: %s\n' "$BACKEND"
		printf 'form: %s\n' "$form"
		printf 'exit: %s\n' "$rc"
		printf 'class: %s\n' "$class"
		printf 'retry: %s\n' "$retry"
		printf 'note: %s\n' "$note"
		if [ -s "$so" ] && [ -n "$(tail -c1 "$so")" ]; then printf 'stdout-no-final-newline: true\n'; fi
		if [ -s "$se" ] && [ -n "$(tail -c1 "$se")" ]; then printf 'stderr-no-final-newline: true\n'; fi
		printf -- '-- stdout --\n'
		cat "$so"
		if [ -s "$so" ] && [ -n "$(tail -c1 "$so")" ]; then printf '\n'; fi
		printf -- '-- stderr --\n'
		cat "$se"
		if [ -s "$se" ] && [ -n "$(tail -c1 "$se")" ]; then printf '\n'; fi
	} >"$file"
	COUNT=$((COUNT + 1))
}

# Lock helpers (files relative to $R/.git).
hold() { : >"$R/.git/$1"; }                                  # create <path> (a .lock)
pidfile() { printf 'pid %s\n' "$2" >"$R/.git/$1"; }           # <name>~pid.lock, pid
pack_all() { g pack-refs --all; }
hook() { # hook <phase-to-fail>: reference-transaction hook exiting 1 in that phase
	mkdir -p "$R/.git/hooks"
	printf '#!/bin/sh\nif [ "$1" = %s ]; then exit 1; fi\nexit 0\n' "$1" >"$R/.git/hooks/reference-transaction"
	chmod +x "$R/.git/hooks/reference-transaction"
}

# What refretry makes of git's advice 3, in the notes of its captures.
PIDNS="; git's kill(pid, 0) cannot see a holder in another pid namespace, so refretry waits until the lock is older than its pid grace"

# Expected texts.
lockmsg() { printf "Unable to create '%s': File exists." "$R/.git/$1"; }
ADV1_55='Another git process seems to be running in this repository, or the lock file may be stale'

# =======================================================================================
# Cases
# =======================================================================================

suite_reftable_locks() {
	local n="tables.list.lock held (created by hand), reftable.lockTimeout=0"
	local L=reftable/tables.list.lock
	fresh; hold $L
	cap lock-tables-list-single single lock-contention true 128 \
		"fatal: update_ref failed for ref 'refs/heads/x': cannot lock references" "$n" \
		-- "${FAST[@]}" update-ref refs/heads/x "$B"
	fresh; hold $L
	cap lock-tables-list-single-default-timeout single lock-contention true 128 \
		"fatal: update_ref failed for ref 'refs/heads/x': cannot lock references" \
		"tables.list.lock held (created by hand), default reftable.lockTimeout (100 ms): same text as with timeout 0" \
		-- update-ref refs/heads/x "$B"
	fresh; hold $L
	cap lock-tables-list-delete delete lock-contention true 1 \
		"error: cannot lock references" "$n" \
		-- "${FAST[@]}" update-ref -d refs/heads/x
	fresh; hold $L; line "update refs/heads/x $B"
	cap lock-tables-list-stdin stdin lock-contention true 128 \
		"fatal: cannot lock references" "$n; --stdin implicit commit at EOF" \
		-- "${FAST[@]}" update-ref --stdin
	fresh; hold $L; line start; line "update refs/heads/x $B"; line prepare; line commit
	cap lock-tables-list-stdin-prepare prepare lock-contention true 128 \
		"fatal: prepare: cannot lock references" "$n; start/update/prepare/commit, fails at prepare after start: ok" \
		-- "${FAST[@]}" update-ref --stdin
	fresh; hold $L; line start; line "update refs/heads/x $B"; line commit
	cap lock-tables-list-stdin-commit commit lock-contention true 128 \
		"fatal: commit: cannot lock references" "$n; start/update/commit without prepare" \
		-- "${FAST[@]}" update-ref --stdin
	fresh; hold $L; line "update refs/heads/x $B"
	cap lock-tables-list-batch batch lock-contention true 128 \
		"fatal: cannot lock references" "$n; --batch-updates: reftable lock failure is GENERIC, whole batch fails" \
		-- "${FAST[@]}" update-ref --stdin --batch-updates
	fresh; hold $L; field "update refs/heads/x"; field "$B"; field ""
	cap lock-tables-list-stdin-z stdin lock-contention true 128 \
		"fatal: cannot lock references" "$n; -z --stdin" \
		-- "${FAST[@]}" update-ref -z --stdin
	fresh; hold $L; pidfile reftable/tables.list~pid.lock "$LIVEPID"
	cap lock-tables-list-pidfile-live single lock-contention true 128 \
		"fatal: update_ref failed for ref 'refs/heads/x': cannot lock references" \
		"$n, plus tables.list~pid.lock naming live pid $LIVEPID: reftable never prints PID advice" \
		-- "${FAST[@]}" update-ref refs/heads/x "$B"
	fresh; hold $L; pidfile reftable/tables.list~pid.lock "$DEADPID"
	cap lock-tables-list-pidfile-dead single lock-contention true 128 \
		"fatal: update_ref failed for ref 'refs/heads/x': cannot lock references" \
		"$n, plus tables.list~pid.lock naming dead pid $DEADPID: the message cannot show staleness; a wrapper must inspect the pid file itself" \
		-- "${FAST[@]}" update-ref refs/heads/x "$B"
}

suite_files_locks() {
	local n="<ref>.lock held (created by hand), lock timeouts 0"
	local L=refs/heads/x.lock
	fresh; hold $L
	cap lock-ref-single single lock-contention true 128 \
		"fatal: update_ref failed for ref 'refs/heads/x': cannot lock ref 'refs/heads/x': $(lockmsg $L)" "$n" \
		-- "${FAST[@]}" update-ref refs/heads/x "$B"
	fresh; hold $L
	cap lock-ref-single-default-timeout single lock-contention true 128 \
		"fatal: update_ref failed for ref 'refs/heads/x': cannot lock ref 'refs/heads/x': $(lockmsg $L)" \
		"<ref>.lock held (created by hand), default core.filesRefLockTimeout (100 ms): same text as with timeout 0" \
		-- update-ref refs/heads/x "$B"
	fresh; hold $L
	cap lock-ref-delete delete lock-contention true 1 \
		"error: cannot lock ref 'refs/heads/x': $(lockmsg $L)" "$n" \
		-- "${FAST[@]}" update-ref -d refs/heads/x
	fresh; hold $L; line "update refs/heads/x $B"
	cap lock-ref-stdin stdin lock-contention true 128 \
		"fatal: cannot lock ref 'refs/heads/x': $(lockmsg $L)" "$n; --stdin implicit commit" \
		-- "${FAST[@]}" update-ref --stdin
	fresh; hold refs/heads/y.lock; line "update refs/heads/x $B"; line "update refs/heads/y $B"
	cap lock-ref-stdin-second stdin lock-contention true 128 \
		"fatal: cannot lock ref 'refs/heads/y': $(lockmsg refs/heads/y.lock)" "$n; --stdin, the second of two refs is locked (nothing is committed)" \
		-- "${FAST[@]}" update-ref --stdin
	fresh; hold $L; field "update refs/heads/x"; field "$B"; field ""
	cap lock-ref-stdin-z stdin lock-contention true 128 \
		"fatal: cannot lock ref 'refs/heads/x': $(lockmsg $L)" "$n; -z --stdin" \
		-- "${FAST[@]}" update-ref -z --stdin
	fresh; hold $L; line start; line "update refs/heads/x $B"; line prepare; line commit
	cap lock-ref-stdin-prepare prepare lock-contention true 128 \
		"fatal: prepare: cannot lock ref 'refs/heads/x': $(lockmsg $L)" "$n; start/update/prepare/commit" \
		-- "${FAST[@]}" update-ref --stdin
	fresh; hold $L; line start; line "update refs/heads/x $B"; line commit
	cap lock-ref-stdin-commit commit lock-contention true 128 \
		"fatal: commit: cannot lock ref 'refs/heads/x': $(lockmsg $L)" "$n; start/update/commit without prepare" \
		-- "${FAST[@]}" update-ref --stdin
	fresh; hold refs/heads/main.lock
	cap lock-symref-target-single single lock-contention true 128 \
		"fatal: update_ref failed for ref 'HEAD': cannot lock ref 'HEAD': $(lockmsg refs/heads/main.lock)" \
		"refs/heads/main.lock held while updating HEAD (symref to main): the wrapper names HEAD, the path names the target" \
		-- "${FAST[@]}" update-ref HEAD "$B"
	# HEAD.lock while updating the checked-out branch.
	local hw=refs/heads/main # 2.39 names HEAD in the wrapper
	is39 && hw=HEAD
	local nh="HEAD.lock held (created by hand) while updating the checked-out branch refs/heads/main, lock timeouts 0"
	fresh; hold HEAD.lock
	cap lock-head-single single lock-contention true 128 \
		"fatal: update_ref failed for ref 'refs/heads/main': cannot lock ref '$hw': $(lockmsg HEAD.lock)" "$nh" \
		-- "${FAST[@]}" update-ref refs/heads/main "$B"
	fresh; hold HEAD.lock; line "update refs/heads/main $B"
	cap lock-head-stdin stdin lock-contention true 128 \
		"fatal: cannot lock ref '$hw': $(lockmsg HEAD.lock)" "$nh; --stdin" \
		-- "${FAST[@]}" update-ref --stdin
	# packed-refs.lock: taken by every deletion.
	local np="packed-refs.lock held (created by hand), lock timeouts 0"
	fresh; hold packed-refs.lock
	cap lock-packed-refs-delete delete lock-contention true 1 \
		"error: $(lockmsg packed-refs.lock)" "$np; deleting a loose-only ref still takes packed-refs.lock" \
		-- "${FAST[@]}" update-ref -d refs/heads/x
	fresh; hold packed-refs.lock
	cap lock-packed-refs-delete-default-timeout delete lock-contention true 1 \
		"error: $(lockmsg packed-refs.lock)" \
		"packed-refs.lock held (created by hand), default core.packedRefsTimeout (1000 ms): same text as with timeout 0" \
		-- update-ref -d refs/heads/x
	fresh; hold packed-refs.lock; line "delete refs/heads/x"
	cap lock-packed-refs-stdin-delete stdin lock-contention true 128 \
		"fatal: $(lockmsg packed-refs.lock)" "$np; --stdin delete" \
		-- "${FAST[@]}" update-ref --stdin
	fresh; hold packed-refs.lock; line start; line "delete refs/heads/x"; line prepare; line commit
	cap lock-packed-refs-stdin-prepare prepare lock-contention true 128 \
		"fatal: prepare: $(lockmsg packed-refs.lock)" "$np; start/delete/prepare" \
		-- "${FAST[@]}" update-ref --stdin
	if is55; then
		fresh; hold packed-refs.lock; line "delete refs/heads/x"; line "update refs/heads/y $B"
		cap lock-packed-refs-batch-delete batch lock-contention true 128 \
			"fatal: $(lockmsg packed-refs.lock)" "$np; --batch-updates: packed-refs.lock failure is GENERIC, the whole batch fails (nothing applied)" \
			-- "${FAST[@]}" update-ref --stdin --batch-updates
		# Advice 2: a pid file naming a live process.
		local nl="<ref>.lock plus <ref>~pid.lock naming live pid $LIVEPID (advice 2), lock timeouts 0"
		fresh; hold $L; pidfile refs/heads/x~pid.lock $LIVEPID
		cap lock-ref-pid-live-single single lock-contention true 128 \
			"Lock may be held by process $LIVEPID; if no git process is running, the lock file may be stale (PIDs can be reused)" "$nl" \
			-- "${FAST[@]}" update-ref refs/heads/x "$B"
		fresh; hold $L; pidfile refs/heads/x~pid.lock $LIVEPID
		cap lock-ref-pid-live-delete delete lock-contention true 1 \
			"Lock may be held by process $LIVEPID;" "$nl" \
			-- "${FAST[@]}" update-ref -d refs/heads/x
		fresh; hold $L; pidfile refs/heads/x~pid.lock $LIVEPID; line "update refs/heads/x $B"
		cap lock-ref-pid-live-stdin stdin lock-contention true 128 \
			"Lock may be held by process $LIVEPID;" "$nl; --stdin" \
			-- "${FAST[@]}" update-ref --stdin
		fresh; hold packed-refs.lock; pidfile packed-refs~pid.lock $LIVEPID
		cap lock-packed-refs-pid-live-delete delete lock-contention true 1 \
			"Lock may be held by process $LIVEPID;" "packed-refs.lock plus packed-refs~pid.lock (live pid $LIVEPID)" \
			-- "${FAST[@]}" update-ref -d refs/heads/x
		fresh; hold $L; printf 'garbage' >"$R/.git/refs/heads/x~pid.lock"
		cap lock-ref-pid-malformed single lock-contention true 128 \
			"warning: malformed lock pid file '$R/.git/refs/heads/x~pid.lock'" \
			"<ref>.lock plus a malformed <ref>~pid.lock: warning line, then advice 1" \
			-- "${FAST[@]}" update-ref refs/heads/x "$B"
	fi
}

suite_batch_traps() { # 2.55 files
	local n="--batch-updates with <ref>.lock held: per-ref rejection (CREATE_EXISTS), exit 0; the wrapper passes it through and does not retry"
	fresh; hold refs/heads/x.lock; line "update refs/heads/x $B"
	cap batch-lock-ref-rejected batch lock-contention false 0 \
		"rejected refs/heads/x $B (null) reference already exists" "$n" \
		-- "${FAST[@]}" update-ref --stdin --batch-updates
	fresh; hold refs/heads/x.lock; line "update refs/heads/x $B"; line "update refs/heads/y $B"
	cap batch-lock-ref-mixed batch lock-contention false 0 \
		"error: cannot lock ref 'refs/heads/x': $(lockmsg refs/heads/x.lock)" "$n; refs/heads/y in the same batch is updated" \
		-- "${FAST[@]}" update-ref --stdin --batch-updates
	fresh; hold HEAD.lock; line "update refs/heads/main $B"
	cap batch-lock-head-rejected batch lock-contention false 0 \
		"rejected HEAD $B (null) reference already exists" \
		"--batch-updates with HEAD.lock held (TRAP 2): main IS updated, HEAD's log-only entry is rejected; never retry a rejected HEAD line" \
		-- "${FAST[@]}" update-ref --stdin --batch-updates
	fresh; hold refs/heads/x.lock; pidfile refs/heads/x~pid.lock $DEADPID; line "update refs/heads/x $B"
	cap batch-lock-ref-pid-dead batch lock-contention false 0 \
		"Lock was held by process $DEADPID, which is no longer running; the lock file appears to be stale" \
		"--batch-updates, <ref>.lock plus <ref>~pid.lock naming a dead pid (advice 3): per-ref rejection, exit 0$PIDNS" \
		-- "${FAST[@]}" update-ref --stdin --batch-updates
}

suite_stale() {
	# packed-refs.new leftover (both versions, files).
	local n="leftover packed-refs.new (created by hand) and the ref is packed (pack-refs --all)"
	fresh; pack_all; hold packed-refs.new
	cap stale-packed-refs-new-delete delete stale-lock false 1 \
		"error: unable to create file $R/.git/packed-refs.new: File exists" "$n" \
		-- "${FAST[@]}" update-ref -d refs/heads/x
	fresh; pack_all; hold packed-refs.new; line "delete refs/heads/x"
	cap stale-packed-refs-new-stdin-delete stdin stale-lock false 128 \
		"fatal: unable to create file $R/.git/packed-refs.new: File exists" "$n; --stdin delete" \
		-- "${FAST[@]}" update-ref --stdin
	if is55; then
		fresh; pack_all; hold packed-refs.new; line "delete refs/heads/x"
		cap stale-packed-refs-new-batch batch stale-lock false 128 \
			"unable to create file $R/.git/packed-refs.new: File exists" "$n; --batch-updates: GENERIC, whole batch fails" \
			-- "${FAST[@]}" update-ref --stdin --batch-updates
		local ADV3="Lock was held by process $DEADPID, which is no longer running; the lock file appears to be stale"
		local nd="<ref>.lock plus <ref>~pid.lock naming pid $DEADPID (above PID_MAX_LIMIT, never alive): advice 3"
		fresh; hold refs/heads/x.lock; pidfile refs/heads/x~pid.lock $DEADPID
		cap stale-lock-ref-single single lock-contention true 128 "$ADV3" "$nd$PIDNS" \
			-- "${FAST[@]}" update-ref refs/heads/x "$B"
		fresh; hold refs/heads/x.lock; pidfile refs/heads/x~pid.lock $DEADPID
		cap stale-lock-ref-delete delete lock-contention true 1 "$ADV3" "$nd$PIDNS" \
			-- "${FAST[@]}" update-ref -d refs/heads/x
		fresh; hold refs/heads/x.lock; pidfile refs/heads/x~pid.lock $DEADPID; line "update refs/heads/x $B"
		cap stale-lock-ref-stdin stdin lock-contention true 128 "$ADV3" "$nd; --stdin$PIDNS" \
			-- "${FAST[@]}" update-ref --stdin
		fresh; hold refs/heads/x.lock; pidfile refs/heads/x~pid.lock $DEADPID; line start; line "update refs/heads/x $B"; line prepare
		cap stale-lock-ref-stdin-prepare prepare lock-contention true 128 "$ADV3" "$nd; start/update/prepare$PIDNS" \
			-- "${FAST[@]}" update-ref --stdin
		fresh; hold packed-refs.lock; pidfile packed-refs~pid.lock $DEADPID
		cap stale-lock-packed-refs-delete delete lock-contention true 1 "$ADV3" "packed-refs.lock plus packed-refs~pid.lock naming dead pid $DEADPID$PIDNS" \
			-- "${FAST[@]}" update-ref -d refs/heads/x
		# One fixture with a real, reaped pid (varies from run to run).
		local p
		sh -c 'exit 0' &
		p=$!
		wait "$p" || true
		fresh; hold refs/heads/x.lock; pidfile refs/heads/x~pid.lock "$p"
		cap stale-lock-ref-single-reaped-pid single lock-contention true 128 \
			"Lock was held by process $p, which is no longer running; the lock file appears to be stale" \
			"<ref>.lock plus <ref>~pid.lock naming the pid of a reaped 'sh -c exit 0' (the pid varies between runs)$PIDNS" \
			-- "${FAST[@]}" update-ref refs/heads/x "$B"
	fi
}

suite_conflicts() {
	# CAS mismatch: x is at A.
	fresh
	cap cas-mismatch-single single conflict false 128 \
		"fatal: update_ref failed for ref 'refs/heads/x': cannot lock ref 'refs/heads/x': is at $A but expected $B" \
		"x is at A; 3-argument form with old = B" \
		-- update-ref refs/heads/x "$C" "$B"
	fresh; line "update refs/heads/x $C $B"
	cap cas-mismatch-stdin stdin conflict false 128 \
		"fatal: cannot lock ref 'refs/heads/x': is at $A but expected $B" "x is at A; --stdin update with old = B" \
		-- update-ref --stdin
	fresh; line start; line "update refs/heads/x $C $B"; line prepare; line commit
	cap cas-mismatch-stdin-prepare prepare conflict false 128 \
		"fatal: prepare: cannot lock ref 'refs/heads/x': is at $A but expected $B" "x is at A; start/update/prepare with old = B" \
		-- update-ref --stdin
	fresh
	cap cas-mismatch-delete delete conflict false 1 \
		"error: cannot lock ref 'refs/heads/x': is at $A but expected $B" "x is at A; -d with old = B" \
		-- update-ref -d refs/heads/x "$B"
	fresh; line "verify refs/heads/x $B"
	cap cas-mismatch-verify stdin conflict false 128 \
		"cannot lock ref 'refs/heads/x': is at $A but expected $B" "x is at A; --stdin verify with B" \
		-- update-ref --stdin
	fresh; raw "update refs/heads/x  $B\n"
	cap trap-double-space stdin conflict false 128 \
		"cannot lock ref 'refs/heads/x': is at $A but expected $B" \
		"'update R  NEW' (two spaces) parses as new=zero old=NEW, i.e. a CAS-guarded delete; x is at A" \
		-- update-ref --stdin
	# Already exists.
	fresh
	cap create-exists-single single conflict false 128 \
		"cannot lock ref 'refs/heads/x': reference already exists" "x exists; 3-argument form with empty old (must not exist)" \
		-- update-ref refs/heads/x "$B" ''
	fresh; line "create refs/heads/x $B"
	cap create-exists-stdin stdin conflict false 128 \
		"fatal: cannot lock ref 'refs/heads/x': reference already exists" "x exists; --stdin create" \
		-- update-ref --stdin
	fresh; line "verify refs/heads/x"
	cap create-exists-verify stdin conflict false 128 \
		"cannot lock ref 'refs/heads/x': reference already exists" "x exists; --stdin verify without old (must not exist)" \
		-- update-ref --stdin
	# Missing ref.
	fresh
	cap missing-ref-delete-old delete conflict false 1 \
		"error: cannot lock ref 'refs/heads/nope': unable to resolve reference 'refs/heads/nope'" "refs/heads/nope does not exist; -d with an old value" \
		-- update-ref -d refs/heads/nope "$A"
	fresh
	cap missing-ref-update-old single conflict false 128 \
		"cannot lock ref 'refs/heads/nope': unable to resolve reference 'refs/heads/nope'" "refs/heads/nope does not exist; 3-argument form with an old value" \
		-- update-ref refs/heads/nope "$B" "$A"
	fresh; line "update refs/heads/nope $B $A"
	cap missing-ref-stdin-update-old stdin conflict false 128 \
		"cannot lock ref 'refs/heads/nope': unable to resolve reference 'refs/heads/nope'" "refs/heads/nope does not exist; --stdin update with an old value" \
		-- update-ref --stdin
	# D/F conflicts with existing refs.
	fresh; g update-ref refs/heads/d/r1 "$A"
	cap df-existing-child-single single conflict false 128 \
		"'refs/heads/d/r1' exists; cannot create 'refs/heads/d'" "refs/heads/d/r1 exists (loose); creating refs/heads/d" \
		-- update-ref refs/heads/d "$B"
	fresh
	cap df-existing-parent-single single conflict false 128 \
		"'refs/heads/x' exists; cannot create 'refs/heads/x/sub'" "refs/heads/x exists; creating refs/heads/x/sub" \
		-- update-ref refs/heads/x/sub "$B"
	if isfiles; then
		fresh; g update-ref refs/heads/d/r1 "$A"; pack_all
		cap df-packed-child-single single conflict false 128 \
			"'refs/heads/d/r1' exists; cannot create 'refs/heads/d'" "refs/heads/d/r1 exists only in packed-refs; creating refs/heads/d" \
			-- update-ref refs/heads/d "$B"
		# Non-empty directory blocking (another writer holds refs/heads/foo/bar.lock).
		fresh; mkdir -p "$R/.git/refs/heads/foo"; hold refs/heads/foo/bar.lock
		cap nonempty-dir-blocking-single single conflict false 128 \
			"there is a non-empty directory '.git/refs/heads/foo' blocking reference 'refs/heads/foo'" \
			"refs/heads/foo/bar.lock held (created by hand) while creating refs/heads/foo" \
			-- "${FAST[@]}" update-ref refs/heads/foo "$B"
		fresh; mkdir -p "$R/.git/refs/heads/foo"; hold refs/heads/foo/bar.lock; line "create refs/heads/foo $B"
		cap nonempty-dir-blocking-stdin stdin conflict false 128 \
			"there is a non-empty directory '.git/refs/heads/foo' blocking reference 'refs/heads/foo'" \
			"refs/heads/foo/bar.lock held (created by hand); --stdin create refs/heads/foo" \
			-- "${FAST[@]}" update-ref --stdin
	fi
	if is55; then
		# symref-* commands (2.46+).
		fresh; line "symref-update refs/heads/x refs/heads/main ref refs/heads/y"
		cap symref-expected-symref stdin conflict false 128 \
			"cannot lock ref 'refs/heads/x': expected symref with target 'refs/heads/y': but is a regular ref" \
			"symref-update with an old target on the regular ref refs/heads/x" \
			-- update-ref --stdin
		fresh; line "symref-verify HEAD refs/heads/x"
		cap symref-verify-target-mismatch stdin conflict false 128 \
			"verifying symref target: 'HEAD': is at refs/heads/main but expected refs/heads/x" \
			"--no-deref symref-verify HEAD refs/heads/x while HEAD -> refs/heads/main" \
			-- update-ref --no-deref --stdin
		fresh; line "symref-update HEAD refs/heads/y ref refs/heads/x"
		cap symref-update-target-mismatch stdin conflict false 128 \
			"verifying symref target: 'HEAD': is at refs/heads/main but expected refs/heads/x" \
			"symref-update HEAD with old target refs/heads/x while HEAD -> refs/heads/main" \
			-- update-ref --no-deref --stdin
		fresh; line "symref-verify refs/heads/nope refs/heads/main"
		cap symref-verify-missing stdin conflict false 128 \
			"cannot lock ref 'refs/heads/nope': unable to resolve reference 'refs/heads/nope'" \
			"--no-deref symref-verify on a ref that does not exist" \
			-- update-ref --no-deref --stdin
	fi
}

suite_batch_rejections() { # 2.55, both backends
	local n="--batch-updates: per-ref rejection, exit 0"
	fresh; line "update refs/heads/x $C $B"; line "update refs/heads/y $B"
	cap batch-cas-mismatch batch conflict false 0 \
		"rejected refs/heads/x $C $B incorrect old value provided" "$n; x is at A, old = B; y is updated" \
		-- update-ref --stdin --batch-updates
	fresh; line "create refs/heads/x $B"
	cap batch-create-exists batch conflict false 0 \
		"rejected refs/heads/x $B $ZERO reference already exists" "$n; create of the existing refs/heads/x (compare with batch-lock-ref-rejected)" \
		-- update-ref --stdin --batch-updates
	fresh; line "update refs/heads/nope $B $A"
	cap batch-missing-ref batch conflict false 0 \
		"rejected refs/heads/nope $B $A reference does not exist" "$n; update with old value of a ref that does not exist" \
		-- update-ref --stdin --batch-updates
	fresh; line "update refs/heads/x/sub $B"
	cap batch-df-conflict batch conflict false 0 \
		"rejected refs/heads/x/sub $B (null) refname conflict" "$n; refs/heads/x exists, creating refs/heads/x/sub" \
		-- update-ref --stdin --batch-updates
	fresh; line "symref-update refs/heads/x refs/heads/main ref refs/heads/y"
	cap batch-expected-symref batch conflict false 0 \
		"rejected refs/heads/x $ZERO $ZERO expected symref but found regular ref" "$n; symref-update with old target on a regular ref (both values print as zeros)" \
		-- update-ref --stdin --batch-updates
	fresh; line "update refs/heads/x $NONEX"
	cap batch-nonexistent-object batch invalid-input false 0 \
		"rejected refs/heads/x $NONEX (null) invalid new value provided" "$n; new value is a nonexistent object (rejected while queueing)" \
		-- update-ref --stdin --batch-updates
	fresh; line "update refs/heads/x $T"
	cap batch-non-commit batch invalid-input false 0 \
		"rejected refs/heads/x $T (null) invalid new value provided" "$n; new value is a tree written to a branch" \
		-- update-ref --stdin --batch-updates
	fresh; line "update refs/heads/x $B"; line "update refs/heads/x $C"
	cap batch-multiple-updates batch invalid-input false 128 \
		"fatal: multiple updates for ref 'refs/heads/x' not allowed" "--batch-updates: duplicate ref is GENERIC, the whole batch fails" \
		-- update-ref --stdin --batch-updates
}

suite_parse() { # parse and state errors (identical on every backend)
	local n="--stdin parse error"
	local NEWV="<new-oid>" OLDV="<old-oid>"
	if is39; then NEWV="<newvalue>" OLDV="<oldvalue>"; fi
	fresh; raw '\n'
	cap parse-empty-command stdin invalid-input false 128 "fatal: empty command in input" "$n: empty line" -- update-ref --stdin
	fresh; raw " update refs/heads/x $B\n"
	cap parse-whitespace-before-command stdin invalid-input false 128 "fatal: whitespace before command: " "$n: leading space" -- update-ref --stdin
	fresh; line "frobnicate refs/heads/x"
	cap parse-unknown-command stdin invalid-input false 128 "fatal: unknown command: frobnicate refs/heads/x" "$n" -- update-ref --stdin
	fresh; line "update"
	cap parse-update-no-args stdin invalid-input false 128 "fatal: unknown command: update" "$n: 'update' with no arguments" -- update-ref --stdin
	fresh; line "start extra"
	cap parse-start-extra stdin invalid-input false 128 "fatal: unknown command: start extra" "$n: 'start' followed by extra text" -- update-ref --stdin
	fresh; raw "update \"refs/heads/x $B\n"
	cap parse-badly-quoted stdin invalid-input false 128 "fatal: badly quoted argument: " "$n: unterminated C quote" -- update-ref --stdin
	fresh; raw "update \"refs/heads/x\"z $B\n"
	cap parse-unexpected-char-after-quoted stdin invalid-input false 128 "fatal: unexpected character after quoted argument: " "$n" -- update-ref --stdin
	fresh; raw "update refs/heads/x $B\r\n"
	cap parse-crlf stdin invalid-input false 128 "expected SP but got: " "$n: CRLF line ending" -- update-ref --stdin
	fresh; raw "update refs/heads/x $B"
	cap parse-missing-final-lf stdin invalid-input false 128 "unexpected end of input when reading ${OLDV}" "$n: last line without LF" -- update-ref --stdin
	fresh; raw "update refs/heads/x $B\n"
	cap parse-z-text-input stdin invalid-input false 128 "fatal: invalid ref format: refs/heads/x $B" "-z --stdin fed text-mode input: the whole line up to EOF is taken as the ref" -- update-ref -z --stdin
	fresh; field "update refs/heads/x"; field "$B"
	cap parse-z-eof-old-oid stdin invalid-input false 128 "unexpected end of input when reading ${OLDV}" "-z --stdin: input ends after ${NEWV} (the empty ${OLDV} field is missing)" -- update-ref -z --stdin
	fresh; line "update "
	cap parse-update-missing-ref stdin invalid-input false 128 "fatal: update: missing <ref>" "$n: 'update ' with an empty ref" -- update-ref --stdin
	fresh; line "update refs/heads/x"
	cap parse-update-missing-new stdin invalid-input false 128 "fatal: update refs/heads/x: missing ${NEWV}" "$n" -- update-ref --stdin
	fresh; line "update refs/heads/x nothex"
	cap parse-invalid-new-oid stdin invalid-input false 128 "fatal: update refs/heads/x: invalid ${NEWV}: nothex" "$n" -- update-ref --stdin
	fresh; line "update refs/heads/x $B nothex"
	cap parse-invalid-old-oid stdin invalid-input false 128 "fatal: update refs/heads/x: invalid ${OLDV}: nothex" "$n" -- update-ref --stdin
	fresh; line "update refs/heads/x $B $A junk"
	cap parse-extra-input stdin invalid-input false 128 "fatal: update refs/heads/x: extra input:  junk" "$n" -- update-ref --stdin
	fresh; line "update refs/heads/a..b $B"
	cap parse-invalid-ref-format stdin invalid-input false 128 "fatal: invalid ref format: refs/heads/a..b" "$n: ref name with '..'" -- update-ref --stdin
	fresh; line "create refs/heads/new $ZERO"
	cap parse-create-zero-new stdin invalid-input false 128 "fatal: create refs/heads/new: zero ${NEWV}" "$n" -- update-ref --stdin
	fresh; line "delete refs/heads/x $ZERO"
	cap parse-delete-zero-old stdin invalid-input false 128 "fatal: delete refs/heads/x: zero ${OLDV}" "$n" -- update-ref --stdin
	fresh; line "option frob"
	cap parse-option-unknown stdin invalid-input false 128 "fatal: option unknown: frob" "$n" -- update-ref --stdin
	fresh; line "update refs/heads/x $B"; line "update refs/heads/x $C"
	cap multiple-updates-stdin stdin invalid-input false 128 "fatal: multiple updates for ref 'refs/heads/x' not allowed" "the same ref twice in one transaction" -- update-ref --stdin
	fresh; line start; line start
	cap state-restart stdin invalid-input false 128 "fatal: cannot restart ongoing transaction" "two starts" -- update-ref --stdin
	fresh; line start; line "update refs/heads/x $B"; line prepare; line "update refs/heads/y $B"
	cap state-prepared-only-closed stdin invalid-input false 128 "fatal: prepared transactions can only be closed" "update after prepare" -- update-ref --stdin
	fresh; line start; line "update refs/heads/x $B"; line commit; line "update refs/heads/y $B"
	cap state-closed stdin invalid-input false 128 "fatal: transaction is closed" "update after commit (x IS committed)" -- update-ref --stdin
	if is55; then
		fresh; line "symref-delete HEAD"
		cap parse-symref-delete-deref stdin invalid-input false 128 "fatal: symref-delete: cannot operate with deref mode" "$n: symref-delete without no-deref" -- update-ref --stdin
	else
		fresh; line "symref-create refs/heads/s refs/heads/main"
		cap parse-symref-create-unknown stdin invalid-input false 128 "fatal: unknown command: symref-create refs/heads/s refs/heads/main" "2.39 has no symref-* commands" -- update-ref --stdin
	fi
}

suite_invalid() {
	fresh
	cap bad-refname-single single invalid-input false 128 "refusing to update ref with bad name 'refs/heads/a..b'" "2-argument form with an invalid ref name" \
		-- update-ref refs/heads/a..b "$B"
	fresh
	cap bad-refname-delete-old delete conflict false 1 "cannot lock ref 'refs/heads/a..b': unable to resolve reference 'refs/heads/a..b'" \
		"-d with an invalid ref name and an old value: deletion skips the name check, so it reads as a missing ref (without old value it exits 0)" \
		-- update-ref -d refs/heads/a..b "$A"
	fresh
	cap nonexistent-object-single single invalid-input false 128 "trying to write ref 'refs/heads/x' with nonexistent object $NONEX" "new value is a well-formed oid with no object" \
		-- update-ref refs/heads/x "$NONEX"
	fresh; line "update refs/heads/x $NONEX"
	cap nonexistent-object-stdin stdin invalid-input false 128 "trying to write ref 'refs/heads/x' with nonexistent object $NONEX" "--stdin" \
		-- update-ref --stdin
	fresh
	cap non-commit-branch-single single invalid-input false 128 "trying to write non-commit object $T to branch 'refs/heads/x'" "a tree written to a branch" \
		-- update-ref refs/heads/x "$T"
	fresh; line "update refs/heads/x $BLOB"
	cap non-commit-branch-stdin stdin invalid-input false 128 "trying to write non-commit object $BLOB to branch 'refs/heads/x'" "--stdin: a blob written to a branch" \
		-- update-ref --stdin
	fresh
	cap not-valid-sha1-single single invalid-input false 128 "fatal: nothex: not a valid SHA1" "new value does not resolve" \
		-- update-ref refs/heads/x nothex
	fresh
	cap not-valid-old-sha1-single single invalid-input false 128 "fatal: nothex: not a valid old SHA1" "old value does not resolve" \
		-- update-ref refs/heads/x "$B" nothex
	fresh
	cap empty-message-single single invalid-input false 128 "fatal: Refusing to perform update with empty message." "-m ''" \
		-- update-ref -m '' refs/heads/x "$B"
	fresh; line "update refs/heads/x $B"
	cap empty-message-stdin stdin invalid-input false 128 "fatal: Refusing to perform update with empty message." "-m '' --stdin" \
		-- update-ref -m '' --stdin
	# Usage (exit 129).
	fresh
	cap usage-h usage invalid-input false 129 "usage: git update-ref" "-h prints usage on stdout" -- update-ref -h
	fresh
	cap usage-no-args usage invalid-input false 129 "usage: git update-ref" "no arguments" -- update-ref
	fresh
	cap usage-stdin-positional usage invalid-input false 129 "usage: git update-ref" "--stdin with positional arguments" -- update-ref --stdin refs/heads/x "$B"
	fresh
	cap usage-delete-stdin usage invalid-input false 129 "usage: git update-ref" "-d --stdin" -- update-ref -d --stdin
	fresh
	cap usage-z-without-stdin usage invalid-input false 129 "usage: git update-ref" "-z without --stdin" -- update-ref -z refs/heads/x "$B"
	fresh
	cap usage-unknown-option usage invalid-input false 129 "error: unknown option \`frobnicate'" "unknown option" -- update-ref --frobnicate refs/heads/x "$B"
	if is55; then
		fresh
		cap batch-without-stdin single invalid-input false 128 "fatal: --batch-updates can only be used with --stdin" "--batch-updates without --stdin" \
			-- update-ref --batch-updates refs/heads/x "$B"
	else
		fresh; line "update refs/heads/x $B"
		cap batch-updates-unknown-option usage invalid-input false 129 "error: unknown option \`batch-updates'" "2.39 has no --batch-updates" \
			-- update-ref --stdin --batch-updates
	fi
	# Multiple updates via a symref.
	fresh; line "update refs/heads/main $B"; line "update HEAD $C"
	cap multiple-updates-head-referent stdin invalid-input false 128 \
		"fatal: multiple updates for 'HEAD' (including one via its referent 'refs/heads/main') are not allowed" \
		"refs/heads/main, then HEAD (-> main) in one transaction" -- update-ref --stdin
	fresh; line "update HEAD $B"; line "update refs/heads/main $C"
	cap multiple-updates-head-then-referent stdin invalid-input false 128 \
		"fatal: multiple updates for 'refs/heads/main' (including one via symref 'HEAD') are not allowed" \
		"HEAD (-> main), then refs/heads/main in one transaction: the order decides the wording" -- update-ref --stdin
	fresh; g symbolic-ref refs/heads/s refs/heads/x; line "update refs/heads/s $B"; line "update refs/heads/x $C"
	cap multiple-updates-via-symref stdin invalid-input false 128 \
		"multiple updates for 'refs/heads/x' (including one via symref 'refs/heads/s') are not allowed" \
		"refs/heads/s -> refs/heads/x; both updated in one transaction" -- update-ref --stdin
	fresh; line "update refs/heads/d $B"; line "update refs/heads/d/e $B"
	cap df-same-transaction stdin invalid-input false 128 \
		"cannot process 'refs/heads/d' and 'refs/heads/d/e' at the same time" "D/F conflict inside one transaction" -- update-ref --stdin
	# Bad configuration.
	if isfiles; then
		fresh
		cap bad-config-ref-lock-timeout single invalid-input false 128 "bad numeric config value 'abc' for 'core.filesreflocktimeout'" \
			"-c core.filesRefLockTimeout=abc" -- -c core.filesRefLockTimeout=abc update-ref refs/heads/x "$B"
	fi
	if is55 && isrt; then
		fresh
		cap bad-config-reftable-lock-timeout single invalid-input false 128 \
			"reftable lock timeout does not support negative values other than -1" "-c reftable.lockTimeout=-5" \
			-- -c reftable.lockTimeout=-5 update-ref refs/heads/x "$B"
	fi
	# Pseudoref.
	if is55; then
		fresh
		cap pseudoref-single single invalid-input false 128 "refusing to update pseudoref 'FETCH_HEAD'" "FETCH_HEAD is a pseudoref" \
			-- update-ref FETCH_HEAD "$B"
	fi
}

suite_other() {
	local h
	if is55; then
		for h in preparing prepared; do
			fresh; hook $h
			cap hook-$h-single single other false 128 "fatal: in '$h' phase, update aborted by the reference-transaction hook" \
				"reference-transaction hook exits 1 in state $h" -- update-ref refs/heads/x "$B"
			fresh; hook $h; line "update refs/heads/x $B"
			cap hook-$h-stdin stdin other false 128 "fatal: in '$h' phase, update aborted by the reference-transaction hook" \
				"reference-transaction hook exits 1 in state $h; --stdin" -- update-ref --stdin
			fresh; hook $h
			cap hook-$h-delete delete other false 128 "fatal: in '$h' phase, update aborted by the reference-transaction hook" \
				"reference-transaction hook exits 1 in state $h; -d (dies: exit 128, not 1)" -- update-ref -d refs/heads/x
		done
		fresh; hook prepared; line start; line "update refs/heads/x $B"; line prepare; line commit
		cap hook-prepared-stdin-prepare prepare other false 128 "in 'prepared' phase, update aborted by the reference-transaction hook" \
			"reference-transaction hook exits 1 in state prepared; explicit prepare" -- update-ref --stdin
		fresh; hook preparing; line "update refs/heads/x $B"
		cap hook-preparing-batch batch other false 128 "in 'preparing' phase, update aborted by the reference-transaction hook" \
			"reference-transaction hook exits 1 in state preparing; --batch-updates: GENERIC, whole batch fails" -- update-ref --stdin --batch-updates
	else
		fresh; hook prepared
		cap hook-prepared-single single other false 128 "fatal: ref updates aborted by hook" \
			"reference-transaction hook exits 1 in state prepared (2.39 has no preparing state)" -- update-ref refs/heads/x "$B"
		fresh; hook prepared; line "update refs/heads/x $B"
		cap hook-prepared-stdin stdin other false 128 "fatal: ref updates aborted by hook" \
			"reference-transaction hook exits 1 in state prepared; --stdin" -- update-ref --stdin
		fresh; hook prepared; line start; line "update refs/heads/x $B"; line prepare; line commit
		cap hook-prepared-stdin-prepare prepare other false 128 "ref updates aborted by hook" \
			"reference-transaction hook exits 1 in state prepared; explicit prepare" -- update-ref --stdin
		fresh; hook prepared
		cap hook-prepared-delete delete other false 128 "fatal: ref updates aborted by hook" \
			"reference-transaction hook exits 1 in state prepared; -d (dies: exit 128, not 1)" -- update-ref -d refs/heads/x
	fi
	fresh; mkdir -p "$R/.git/hooks"; printf '#!/bin/sh\nexit 1\n' >"$R/.git/hooks/reference-transaction"; chmod -x "$R/.git/hooks/reference-transaction"
	cap hook-not-executable-hint single other false 0 "hint: The '.git/hooks/reference-transaction' hook was ignored because it's not set as executable." \
		"non-executable reference-transaction hook: hint on stderr, the update SUCCEEDS (exit 0)" -- update-ref refs/heads/x "$B"
	# Quarantine.
	fresh; ENVS=(GIT_QUARANTINE_PATH="$ROOT/q")
	cap quarantine-single single other false 128 "fatal: update_ref failed for ref 'refs/heads/x': ref updates forbidden inside quarantine environment" \
		"GIT_QUARANTINE_PATH set (as in a pre-receive hook)" -- update-ref refs/heads/x "$B"
	fresh; ENVS=(GIT_QUARANTINE_PATH="$ROOT/q"); line "update refs/heads/x $B"
	cap quarantine-stdin stdin other false 128 "fatal: ref updates forbidden inside quarantine environment" \
		"GIT_QUARANTINE_PATH set; --stdin" -- update-ref --stdin
	if isfiles; then
		# Broken ref file, non-directory in the way, over-long name, commit-phase failure.
		fresh; printf 'garbage\n' >"$R/.git/refs/heads/x"
		cap broken-ref-single single other false 128 "unable to resolve reference 'refs/heads/x': reference broken" \
			"refs/heads/x contains garbage" -- update-ref refs/heads/x "$B" "$A"
		fresh; printf 'garbage\n' >"$R/.git/refs/heads/junk"
		cap non-directory-in-the-way single other false 128 "non-directory in the way" \
			"refs/heads/junk is a non-ref file; creating refs/heads/junk/a" -- update-ref refs/heads/junk/a "$B"
		local long
		long=$(printf 'a%.0s' $(seq 1 300))
		fresh
		cap lock-name-too-long single other false 128 "File name too long" \
			"ref name component of 300 characters: non-EEXIST lock error (ENAMETOOLONG)" -- update-ref "refs/heads/$long" "$B"
		fresh; mkdir -p "$R/.git/logs/refs/heads/zz/sub"; : >"$R/.git/logs/refs/heads/zz/sub/f"
		line "update refs/heads/x $B $A"; line "update refs/heads/zz $B"
		cap commit-phase-logs-dir stdin other false 128 "there are still logs under" \
			"logs/refs/heads/zz/ is a non-empty directory: commit-phase failure after x was already updated (not atomic)" -- update-ref --stdin
	fi
	if isrt; then
		fresh; printf '0x000000000009-0x000000000009-00000000.ref\n' >"$R/.git/reftable/tables.list"
		cap reftable-missing-table single other false 128 "file does not exist" \
			"tables.list names a table file that does not exist" -- update-ref refs/heads/x "$B"
	fi
}

suite_39_on_reftable() {
	# 2.39 cannot open a reftable repository at all.
	local save=$TPL
	TPL="$ROOT/tpl/2.55-reftable"
	BACKEND=reftable
	fresh
	cap repo-unknown-extension single other false 128 "fatal: unknown repository extension found:" \
		"git 2.39 run in a reftable repository created by 2.55" -- update-ref refs/heads/x "$B"
	TPL=$save
	BACKEND=files
}

# =======================================================================================
use_version "$GIT55"
use_backend reftable
suite_reftable_locks
suite_conflicts
suite_batch_rejections
suite_parse
suite_invalid
suite_other
use_backend files
suite_files_locks
suite_batch_traps
suite_stale
suite_conflicts
suite_batch_rejections
suite_parse
suite_invalid
suite_other

use_version "$GIT39"
use_backend files
suite_files_locks
suite_stale
suite_conflicts
suite_parse
suite_invalid
suite_other
suite_39_on_reftable

# ---------------------------------------------------------------------------------------
# Consistency checks over the written corpus: labels agree with the captured text.
hdr() { sed -n "s/^$1: //p;/^-- stdout --\$/q" "$2"; }
for f in "$OUT"/*.txtar; do
	b=$(basename "$f")
	class=$(hdr class "$f") retry=$(hdr retry "$f") rc=$(hdr exit "$f")
	err=$(sed -n '/^-- stderr --$/,$p' "$f")
	case "$class" in lock-contention | stale-lock | conflict | invalid-input | other) ;; *) die "$b: bad class $class" ;; esac
	if [ "$retry" = true ]; then
		[ "$class" = lock-contention ] || die "$b: retry true but class $class"
		[ "$rc" != 0 ] || die "$b: retry true but exit 0"
	fi
	if [ "$class" = lock-contention ]; then
		if printf '%s' "$err" | grep -q "\.lock': File exists\.\$"; then
			printf '%s' "$err" | grep -qE "^($ADV1_55|remove the file manually to continue\.|Lock may be held by process [0-9]+; .*|Lock was held by process [0-9]+, which is no longer running; .*)\$" ||
				die "$b: lock-contention without advice 1, 2 or 3"
		else
			printf '%s' "$err" | grep -qx '\(fatal: \|error: \|fatal: prepare: \|fatal: commit: \|fatal: update_ref failed for ref .*: \)cannot lock references' ||
				die "$b: lock-contention without a lock message"
		fi
	fi
	if [ "$class" = stale-lock ]; then
		printf '%s' "$err" | grep -qE "packed-refs\.new: File exists\$" ||
			die "$b: stale-lock without packed-refs.new"
	fi
done

printf 'capture-fixtures: wrote %d fixtures to %s\n' "$COUNT" "$OUT" >&2
