#!/usr/bin/env bash
# capture-fetch-fixtures.sh: regenerate the corpus of real `git fetch` failures in
# testdata/fetch/ (one txtar file per case), read by fetch/fixtures_test.go, by running
# two real git binaries.
#
# Usage: scripts/capture-fetch-fixtures.sh <git-2.55> <git-2.39> <outdir>
#   e.g. scripts/capture-fetch-fixtures.sh "$(scripts/get-git.sh)" /usr/bin/git testdata/fetch
#
# Run it from anywhere inside the repository: it builds the project's smart-HTTP test
# server (internal/harness/gitserver/cmd/gitserve) with the caller's Go toolchain first.
#
# Every fixture is captured from a real run: stdout, stderr and the exit code are written
# byte for byte. Each case also states the exit code and a fixed string it expects to see;
# if real git disagrees the script stops with an error instead of writing a mislabelled
# fixture. The header's class is what the case is (what refretry must do with it), not
# what the classifier happens to answer: fetch/fixtures_test.go checks the classifier
# against it.
#
# Combinations: git 2.55 with the files backend, git 2.55 with reftable
# (--ref-format=reftable on init and clone), git 2.39 with files. The HTTP and git://
# cases do not depend on the ref backend and are captured with files only.
#
# Set-up, per case (recreated from a template every time): a bare remote
# $ROOT/remote.git whose main and b1..b20 were at commit A when it was cloned to
# $ROOT/clone (and, with --depth 1 over file://, to $ROOT/shallow), and are now at commit
# B, a child of A. Commit U is an unrelated root commit; tag t1 is at A in both.
#
# Determinism: fixed author/committer identity and dates (stable object ids), LC_ALL=C with
# LANGUAGE unset, HOME pointing at an empty temporary config, GIT_CONFIG_NOSYSTEM=1,
# GIT_TERMINAL_PROMPT=0, every inherited GIT_* variable removed, every repository at the
# same path under /tmp/refretry-fetch-fixtures (so absolute paths in messages are
# stable), and the HTTP server on the fixed port 127.0.0.1:38471 (so URLs are stable; the
# script stops if the port is taken). Held locks are empty files created by hand; the
# dead holder is pid 4194304 (above PID_MAX_LIMIT on 64-bit Linux: never alive).
# The lost-race fixtures are the exception: they are picked from 16 concurrent fetches
# (see race_case), and which refs lost the race can differ from run to run.
#
# The output directory is emptied of its captured *.txtar files first, then refilled
# (the transcribed 2.53-* files stay: testdata/fetch/README.md).
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
	printf 'capture-fetch-fixtures: FAILED: %s\n' "$*" >&2
	exit 1
}

for g in "$GIT55" "$GIT39"; do
	[ -x "$g" ] || die "not an executable: $g"
done
case "$GIT55" in /*) ;; *) GIT55=$(cd "$(dirname "$GIT55")" && pwd)/$(basename "$GIT55") ;; esac
case "$GIT39" in /*) ;; *) GIT39=$(cd "$(dirname "$GIT39")" && pwd)/$(basename "$GIT39") ;; esac
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SRC=$(cd "$(dirname "$0")/.." && pwd) # the repository, for gitserve's sources

ROOT=/tmp/refretry-fetch-fixtures
PORT=38471
[ -L "$ROOT" ] && die "$ROOT is a symlink; refusing to use it"
exec 9>"$ROOT.lock"
flock -n 9 || die "another capture-fetch-fixtures.sh run holds $ROOT.lock"
rm -rf "$ROOT"
mkdir -p "$ROOT/home" "$ROOT/tpl" "$ROOT/bin" "$ROOT/race"
SERVER_PID=
cleanup() {
	if [ -n "$SERVER_PID" ]; then
		kill "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	rm -rf "$ROOT"
}
trap cleanup EXIT

# Built before the environment is scrubbed: go needs the caller's HOME and GOPATH.
(cd "$SRC" && go build -o "$ROOT/bin/gitserve" ./internal/harness/gitserver/cmd/gitserve) ||
	die "cannot build internal/harness/gitserver/cmd/gitserve"
SERVE=$ROOT/bin/gitserve

# ---------------------------------------------------------------------------------------
# Environment.
while IFS= read -r v; do unset "$v"; done < <(compgen -e | grep '^GIT_' || true)
unset LANGUAGE LANG LC_MESSAGES XDG_CONFIG_HOME EDITOR VISUAL PAGER || true
export LC_ALL=C
export TZ=UTC
: >"$ROOT/home/.gitconfig"
export HOME="$ROOT/home"
export XDG_CONFIG_HOME="$HOME/.config"
export GIT_CONFIG_NOSYSTEM=1
export GIT_AUTHOR_NAME='Fixture Author' GIT_AUTHOR_EMAIL='author@example.invalid'
export GIT_COMMITTER_NAME='Fixture Committer' GIT_COMMITTER_EMAIL='committer@example.invalid'
export GIT_AUTHOR_DATE='1700000000 +0000' GIT_COMMITTER_DATE='1700000000 +0000'
export GIT_TERMINAL_PROMPT=0

REMOTE="$ROOT/remote.git" # the bare remote
CLONE="$ROOT/clone"       # its full clone: most cases run here
SHALLOW="$ROOT/shallow"   # its --depth 1 clone
DEADPID=4194304           # > PID_MAX_LIMIT on 64-bit Linux: never a live process
if kill -0 "$DEADPID" 2>/dev/null; then die "pid $DEADPID is alive?"; fi
URL="http://127.0.0.1:$PORT"

# Lock-wait knobs that make a held lock fail at once. 2.39 ignores reftable.lockTimeout
# (it has no reftable) but is given the same command line.
FAST=(-c core.filesRefLockTimeout=0 -c reftable.lockTimeout=0 -c core.packedRefsTimeout=0)

find "$OUT" -name "*.txtar" ! -name "2.53-*" -delete # 2.53-*: transcribed, not captured (README.md)
COUNT=0

# ---------------------------------------------------------------------------------------
# Per-version state (set by use_version / use_backend).
GIT='' VER='' VERFULL='' BACKEND=''
use_version() {
	GIT=$1
	VERFULL=$("$GIT" version | sed -n 's/^git version \([0-9][0-9.]*\).*/\1/p')
	[ -n "$VERFULL" ] || die "cannot read the version of $GIT"
	VER=$(printf '%s' "$VERFULL" | cut -d. -f1,2)
	case "$VER" in
	2.55 | 2.39) ;;
	*) die "unexpected git version $VERFULL from $GIT (want 2.55 and 2.39)" ;;
	esac
}
is55() { [ "$VER" = 2.55 ]; }
isrt() { [ "$BACKEND" = reftable ]; }
isfiles() { [ "$BACKEND" = files ]; }

# Template per version/backend: remote.git, clone and shallow, made in place (so the
# clones' origin URLs name $REMOTE) and then moved under $ROOT/tpl.
A='' B='' U='' TPL=''
make_template() {
	local fmt=()
	if isrt; then
		fmt=(--ref-format=reftable)
	elif is55; then
		fmt=(--ref-format=files)
	fi
	TPL="$ROOT/tpl/$VER-$BACKEND"
	rm -rf "$REMOTE" "$CLONE" "$SHALLOW"
	"$GIT" init -q --bare -b main "${fmt[@]}" "$REMOTE"
	local t i
	t=$("$GIT" -C "$REMOTE" mktree </dev/null)
	A=$("$GIT" -C "$REMOTE" commit-tree -m A "$t")
	B=$("$GIT" -C "$REMOTE" commit-tree -p "$A" -m B "$t")
	U=$("$GIT" -C "$REMOTE" commit-tree -m U "$t")
	"$GIT" -C "$REMOTE" update-ref refs/heads/main "$A"
	for i in $(seq 1 20); do "$GIT" -C "$REMOTE" update-ref "refs/heads/b$i" "$A"; done
	"$GIT" -C "$REMOTE" update-ref refs/tags/t1 "$A"
	"$GIT" clone -q "${fmt[@]}" "$REMOTE" "$CLONE"
	"$GIT" clone -q "${fmt[@]}" --depth 1 "file://$REMOTE" "$SHALLOW" 2>/dev/null
	[ -f "$SHALLOW/.git/shallow" ] || die "the --depth 1 clone is not shallow"
	[ "$("$GIT" -C "$CLONE" rev-parse refs/tags/t1)" = "$A" ] || die "the clone lacks tag t1"
	"$GIT" -C "$REMOTE" update-ref refs/heads/main "$B"
	for i in $(seq 1 20); do "$GIT" -C "$REMOTE" update-ref "refs/heads/b$i" "$B"; done
	mkdir -p "$TPL"
	mv "$REMOTE" "$CLONE" "$SHALLOW" "$TPL/"
}
use_backend() {
	BACKEND=$1
	make_template
}
fresh() {
	rm -rf "$REMOTE" "$CLONE" "$SHALLOW"
	cp -a "$TPL/remote.git" "$TPL/clone" "$TPL/shallow" "$ROOT/"
}
r() { "$GIT" -C "$REMOTE" "$@"; } # set-up in the remote: must succeed
c() { "$GIT" -C "$CLONE" "$@"; }  # set-up in the clone: must succeed

# record NAME CLASS RETRY EXIT EXPECT NOTE DESC RC STDOUT-FILE STDERR-FILE
#   Checks a finished run (exit code RC is EXIT, EXPECT occurs in its output) and writes
#   $OUT/<ver>-<backend>-NAME.txtar.
record() {
	local name=$1 class=$2 retry=$3 want=$4 expect=$5 note=$6 desc=$7 rc=$8 so=$9 se=${10}
	local file="$OUT/$VER-$BACKEND-$name.txtar"
	[ -e "$file" ] && die "duplicate fixture $file"
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

# cap NAME CLASS RETRY EXIT EXPECT NOTE -- GIT-ARGS...
#   Runs "$GIT GIT-ARGS..." in $DIR (default: the clone) with stdin from /dev/null and
#   records it.
DIR=''
cap() {
	local name=$1 class=$2 retry=$3 want=$4 expect=$5 note=$6
	shift 6
	[ "$1" = -- ] || die "cap $name: missing --"
	shift
	local dir=${DIR:-$CLONE}
	DIR=''
	local so="$ROOT/out.stdout" se="$ROOT/out.stderr" rc=0
	(cd "$dir" && timeout 60 "$GIT" "$@") </dev/null >"$so" 2>"$se" || rc=$?
	record "$name" "$class" "$retry" "$want" "$expect" "$note" "git$(printf ' %q' "$@")" "$rc" "$so" "$se"
}

# Lock helpers (paths relative to a repository's .git).
hold() { : >"$CLONE/.git/$1"; }
lockmsg() { printf "Unable to create '%s': File exists." "$1/.git/$2"; }

# hook_prepared: a reference-transaction hook in the clone that refuses in 'prepared'.
hook_prepared() {
	mkdir -p "$CLONE/.git/hooks"
	# shellcheck disable=SC2016 # $1 is the hook's argument, expanded by the hook
	printf '#!/bin/sh\nif [ "$1" = prepared ]; then exit 1; fi\nexit 0\n' >"$CLONE/.git/hooks/reference-transaction"
	chmod +x "$CLONE/.git/hooks/reference-transaction"
}

# unreadable_object: the clone's refs/heads/bad at a commit whose loose object file is
# then replaced by that of a bogus commit ("xxxxx", written with --literally).
unreadable_object() {
	local o x
	o=$(c commit-tree -m bad "$(c mktree </dev/null)")
	c update-ref refs/heads/bad "$o"
	x=$(printf xxxxx | c hash-object --literally -t commit -w --stdin)
	cp -f "$CLONE/.git/objects/${x:0:2}/${x:2}" "$CLONE/.git/objects/${o:0:2}/${o:2}"
}

# HTTP server (internal/harness/gitserver) serving $ROOT, with the git under test's http-backend.
start_server() {
	if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
		die "port $PORT is in use: the HTTP fixtures need it for stable URLs"
	fi
	: >"$ROOT/serve.url"
	"$SERVE" -git "$GIT" -root "$ROOT" -addr "127.0.0.1:$PORT" "$@" >"$ROOT/serve.url" 2>"$ROOT/serve.err" &
	SERVER_PID=$!
	local i
	for i in $(seq 1 100); do
		[ -s "$ROOT/serve.url" ] && break
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	if [ "$(cat "$ROOT/serve.url")" != "$URL" ]; then
		cat "$ROOT/serve.err" >&2
		die "gitserve did not start on $URL"
	fi
}
stop_server() {
	kill "$SERVER_PID"
	wait "$SERVER_PID" || true
	SERVER_PID=''
}

# =======================================================================================
# Cases
# =======================================================================================

suite_locks() {
	local L=refs/remotes/origin/b3.lock n
	if isfiles; then
		local atomic_rc=253
		is55 || atomic_rc=254
		n="refs/remotes/origin/b3.lock held (created by hand), lock timeouts 0; the other refs are updated"
		fresh; hold $L
		cap lock-ref lock-contention true 1 \
			"error: cannot lock ref 'refs/remotes/origin/b3': $(lockmsg "$CLONE" $L)" "$n" \
			-- "${FAST[@]}" fetch origin
		fresh; hold $L
		cap lock-ref-atomic lock-contention true "$atomic_rc" \
			"error: cannot lock ref 'refs/remotes/origin/b3': $(lockmsg "$CLONE" $L)" \
			"refs/remotes/origin/b3.lock held (created by hand), lock timeouts 0, --atomic: nothing is updated" \
			-- "${FAST[@]}" fetch --atomic origin
		fresh; c pack-refs --all; r update-ref -d refs/heads/b7; hold packed-refs.lock
		cap lock-packed-refs-prune lock-contention true 1 \
			"error: could not delete reference refs/remotes/origin/b7: $(lockmsg "$CLONE" packed-refs.lock)" \
			"packed-refs.lock held (created by hand), lock timeouts 0; the clone's refs are packed and the remote deleted b7, so --prune must rewrite packed-refs" \
			-- "${FAST[@]}" fetch --prune origin
		# Dead holder: 2.55 reads <ref>~pid.lock and says the holder is gone; 2.39 does
		# not know pid files.
		local advice
		advice=$(lockmsg "$CLONE" $L)
		is55 && advice="Lock was held by process $DEADPID, which is no longer running; the lock file appears to be stale"
		fresh; hold $L; printf 'pid %s\n' "$DEADPID" >"$CLONE/.git/refs/remotes/origin/b3~pid.lock"
		cap lock-ref-dead-holder lock-contention true 1 "$advice" \
			"refs/remotes/origin/b3.lock plus b3~pid.lock naming dead pid $DEADPID, lock timeouts 0; class lock-contention because Classify reads only the text: the runner decides staleness from the lock files, not from git's words$(is55 || printf '%s' ' (2.39 ignores pid files and prints its usual advice)')" \
			-- "${FAST[@]}" fetch origin
	else
		n="reftable/tables.list.lock held (created by hand), reftable.lockTimeout=0"
		fresh; hold reftable/tables.list.lock
		cap lock-tables-list lock-contention true 251 "error: cannot lock references" "$n" \
			-- "${FAST[@]}" fetch origin
		fresh; hold reftable/tables.list.lock
		cap lock-tables-list-atomic lock-contention true 251 "error: cannot lock references" "$n; --atomic" \
			-- "${FAST[@]}" fetch --atomic origin
	fi
	fresh; : >"$SHALLOW/.git/shallow.lock"
	DIR=$SHALLOW
	cap lock-shallow lock-contention true 128 "fatal: $(lockmsg "$SHALLOW" shallow.lock)" \
		"shallow.lock held (created by hand) in a --depth 1 clone, deepening with --depth 2" \
		-- "${FAST[@]}" fetch --depth 2 origin
}

# race_case: 16 fetches of the same refs at once in one clone, with lock timeouts of
# 10 s so that a loser waits for the winner's lock instead of failing on it, then finds
# the ref already moved. The fixture is the output of the first loser (by start order)
# that names only lost races (no held lock); the set of refs it lost can differ between
# runs. Tried up to 5 times.
race_case() {
	local try i rc pick='' args=(-c core.filesRefLockTimeout=10000 -c reftable.lockTimeout=10000 fetch origin)
	for try in 1 2 3 4 5; do
		fresh
		rm -f "$ROOT/race/"*
		for i in $(seq 1 16); do
			(
				rc=0
				cd "$CLONE" && timeout 60 "$GIT" "${args[@]}" </dev/null >"$ROOT/race/$i.out" 2>"$ROOT/race/$i.err" || rc=$?
				echo "$rc" >"$ROOT/race/$i.rc"
			) &
		done
		wait
		for i in $(seq 1 16); do
			rc=$(cat "$ROOT/race/$i.rc")
			[ "$rc" = 1 ] || continue
			grep -qF "is at $B but expected $A" "$ROOT/race/$i.err" || continue
			grep -qE "File exists|cannot lock references" "$ROOT/race/$i.err" && continue
			pick=$i
			break
		done
		[ -n "$pick" ] && break
	done
	[ -n "$pick" ] || die "$VER-$BACKEND-lost-race: no fetch lost a race cleanly in 5 tries"
	record lost-race lost-race true 1 "is at $B but expected $A" \
		"picked from 16 concurrent identical fetches in one clone (try $try, fetch $pick): another fetch moved the refs between this one's read and its update; lock timeouts 10 s so that losers wait for the lock rather than fail on it; which refs lost varies between runs" \
		"git$(printf ' %q' "${args[@]}")" 1 "$ROOT/race/$pick.out" "$ROOT/race/$pick.err"
}

# deleted_case: git 2.55 on the files backend only (2.39 and reftable skip a ref that
# vanishes while the connectivity check lists the refs): a fetch that needs objects,
# while another process deletes 200 loose refs of the clone one by one. The check dies
# on a deleted ref ("fatal: bad object <ref>") before the fetch updates anything.
deleted_case() {
	is55 && isfiles || return 0
	local try i rc=0 so="$ROOT/out.stdout" se="$ROOT/out.stderr"
	for try in $(seq 1 40); do
		fresh
		for i in $(seq 1 200); do echo "create refs/doomed/$i $A"; done | c update-ref --stdin
		(for i in $(seq 1 200); do "$GIT" -C "$CLONE" update-ref -d "refs/doomed/$i" 2>/dev/null; done) &
		rc=0
		(cd "$CLONE" && timeout 60 "$GIT" fetch origin) </dev/null >"$so" 2>"$se" || rc=$?
		wait
		[ "$rc" = 1 ] && grep -q '^fatal: bad object refs/doomed/' "$se" && break
	done
	record lost-race-ref-deleted lost-race true 1 "did not send all necessary objects" \
		"another process deleted 200 loose refs of the clone (refs/doomed/*) one by one while this fetch ran (try $try): its connectivity check died on one of them before any ref was updated" \
		"git fetch origin" "$rc" "$so" "$se"
}

suite_refs() {
	race_case
	deleted_case
	local atomic_rc=1
	fresh; c branch -q loc origin/b5; r update-ref refs/heads/b5 "$U"
	cap rejected-non-ff rejected false 1 "-> loc  (non-fast-forward)" \
		"refs/heads/loc is at A; the remote's b5 was rewritten to the unrelated root commit U" \
		-- fetch origin refs/heads/b5:refs/heads/loc
	fresh; c branch -q loc origin/b5; r update-ref refs/heads/b5 "$U"
	cap rejected-non-ff-atomic rejected false "$atomic_rc" "-> loc  (non-fast-forward)" \
		"refs/heads/loc is at A; the remote's b5 was rewritten to the unrelated root commit U; --atomic" \
		-- fetch --atomic origin refs/heads/b5:refs/heads/loc
	fresh; r update-ref refs/tags/t1 "$B"
	cap rejected-tag-clobber rejected false 1 "-> t1  (would clobber existing tag)" \
		"tag t1 was fetched at A; the remote moved it to B" \
		-- fetch origin 'refs/tags/*:refs/tags/*'
	fresh; unreadable_object
	cap other-unreadable-object other false 1 "did not send all necessary objects" \
		"the clone's refs/heads/bad points at a commit whose loose object holds a bogus commit: the connectivity check cannot read it" \
		-- fetch origin
	fresh
	cap rejected-checked-out rejected false 128 \
		"fatal: refusing to fetch into branch 'refs/heads/main' checked out at '$CLONE'" \
		"refs/heads/main is checked out in the (non-bare) clone" \
		-- fetch origin refs/heads/b5:refs/heads/main
	local hookmsg="fatal: in 'prepared' phase, update aborted by the reference-transaction hook"
	is55 || hookmsg="fatal: ref updates aborted by hook"
	fresh; hook_prepared
	cap declined-hook-prepared declined false 128 "$hookmsg" \
		"the clone's reference-transaction hook exits 1 in state prepared" \
		-- fetch origin
	fresh
	cap not-found-path not-found false 128 \
		"fatal: '$ROOT/nope.git' does not appear to be a git repository" \
		"the repository path does not exist" \
		-- fetch "$ROOT/nope.git"
	fresh
	cap not-found-remote not-found false 128 \
		"fatal: 'nosuchremote' does not appear to be a git repository" \
		"no remote of that name (git takes it for a path)" \
		-- fetch nosuchremote
	fresh
	cap not-found-ref not-found false 128 "fatal: couldn't find remote ref refs/heads/nope" \
		"the remote has no refs/heads/nope" \
		-- fetch origin refs/heads/nope
	local dfmsg="'git remote prune origin' to remove any old, conflicting branches"
	isrt && dfmsg="-> origin/x  (unable to update local ref)"
	fresh; c update-ref refs/remotes/origin/x/y "$A"; r update-ref refs/heads/x "$B"
	cap df-conflict other false 1 "$dfmsg" \
		"the clone has refs/remotes/origin/x/y and the remote gained branch x: a D/F conflict no retry fixes" \
		-- fetch origin
	fresh
	cap usage-unknown-option usage false 129 "error: unknown option \`no-such-option'" \
		"unknown option" \
		-- fetch --no-such-option
}

suite_transport() {
	local n
	for n in 500 503 429; do
		fresh; start_server -fail-status "$n"
		cap "http-$n" transport true 128 \
			"fatal: unable to access '$URL/remote.git/': The requested URL returned error: $n" \
			"gitserve answers every request with HTTP $n" \
			-- fetch "$URL/remote.git"
		stop_server
	done
	fresh; start_server -after 1 -fail-status 500 -fail-first 1
	cap http-500-post transport true 128 "error: RPC failed; HTTP 500" \
		"gitserve serves the GET of info/refs, then answers the first POST with HTTP 500" \
		-- fetch "$URL/remote.git"
	stop_server
	fresh; start_server -hang-up 1000
	cap http-hang-up transport true 128 \
		"fatal: unable to access '$URL/remote.git/': Empty reply from server" \
		"gitserve closes every connection without a response" \
		-- fetch "$URL/remote.git"
	stop_server
	fresh; start_server -after 1 -hang-up 1000
	cap http-hang-up-post transport true 128 "error: RPC failed; curl 52 Empty reply from server" \
		"gitserve serves the GET of info/refs, then closes the connection of every POST without a response (curl retries one on a fresh connection by itself)" \
		-- fetch "$URL/remote.git"
	stop_server
	fresh; start_server -user u -password p
	cap http-401-no-credentials auth false 128 \
		"fatal: could not read Username for '$URL': terminal prompts disabled" \
		"gitserve requires basic auth (401); no credentials and GIT_TERMINAL_PROMPT=0" \
		-- fetch "$URL/remote.git"
	stop_server
	fresh; start_server
	cap http-404-no-repository not-found false 128 \
		"fatal: repository '$URL/nope.git/' not found" \
		"gitserve serves $ROOT, which has no nope.git (http-backend's 404)" \
		-- fetch "$URL/nope.git"
	stop_server
	fresh
	cap git-connection-refused transport true 128 "errno=Connection refused" \
		"git:// to port 1 of 127.0.0.1, where nothing listens" \
		-- fetch git://127.0.0.1:1/x
}

# =======================================================================================
use_version "$GIT55"
use_backend files
suite_locks
suite_refs
suite_transport
use_backend reftable
suite_locks
suite_refs

use_version "$GIT39"
use_backend files
suite_locks
suite_refs
suite_transport

# ---------------------------------------------------------------------------------------
# Consistency checks over the written corpus: labels agree with each other and with the
# captured text.
hdr() { sed -n "s/^$1: //p;/^-- stdout --\$/q" "$2"; }
for f in "$OUT"/*.txtar; do
	b=$(basename "$f")
	class=$(hdr class "$f") retry=$(hdr retry "$f") rc=$(hdr exit "$f")
	err=$(sed -n '/^-- stderr --$/,$p' "$f")
	case "$class" in
	lock-contention | lost-race | transport) [ "$retry" = true ] || die "$b: class $class but retry $retry" ;;
	stale-lock | rejected | declined | not-found | auth | usage | other) [ "$retry" = false ] || die "$b: class $class but retry $retry" ;;
	*) die "$b: bad class $class" ;;
	esac
	[ "$rc" != 0 ] || die "$b: exit 0"
	if [ "$class" = lock-contention ]; then
		printf '%s' "$err" | grep -qE "\.lock': File exists\.\$|^error: cannot lock references\$" ||
			die "$b: lock-contention without a lock message"
	fi
	if [ "$class" = lost-race ]; then
		printf '%s' "$err" | grep -qE "^error: cannot lock ref '[^']+': is at [0-9a-f]+ but expected [0-9a-f]+\$|^fatal: bad object refs/" ||
			die "$b: lost-race without a lost race"
	fi
done

printf 'capture-fetch-fixtures: wrote %d fixtures to %s\n' "$COUNT" "$OUT" >&2
