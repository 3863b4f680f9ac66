#!/usr/bin/env bash
# git-suite.sh: run git's own tests of update-ref, fetch and push with refretry in front
# of git 2.55, through its git shim, on both ref backends.
#
# Usage: scripts/git-suite.sh [TEST ...]     (default: the list below; make git-suite)
#
# git's test suite (t/, from the same source git 2.55 is built from) runs the git it is
# given by GIT_TEST_INSTALLED. Here that is a directory whose `git` runs refretry under
# the name git (docs/shim.md) with REFRETRY_GIT naming git 2.55: every `git update-ref`,
# `git fetch` and `git push` a test script runs goes through refretry, everything else is
# handed to git 2.55. Each test runs with GIT_TEST_DEFAULT_REF_FORMAT=files and =reftable.
# How many update-ref, fetch and push runs refretry made is printed from its log file (REFRETRY_LOG_FILE),
# with the attempts that were retries, so a run that bypassed refretry shows.
#
# It runs in git's source tree kept in the cache next to the installed git, which
# scripts/get-git.sh builds the installed git in (get-git.sh --source builds it when it
# is not there), and takes about 25 minutes on 2 cores. Exit 1 if any test fails.
set -euo pipefail
cd "$(dirname "$0")/.."

tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
	tests=(t1400-update-ref.sh t1404-update-ref-errors.sh t1416-ref-transaction-hooks.sh
		t1430-bad-ref-name.sh t1409-avoid-packing-refs.sh t1415-worktree-refs.sh
		t0600-reffiles-backend.sh t0610-reftable-basics.sh t5510-fetch.sh t5514-fetch-multiple.sh
		t5526-fetch-submodules.sh t5527-fetch-odd-refs.sh t5574-fetch-output.sh t5516-fetch-push.sh)
fi

git55=$(scripts/get-git.sh)
cache=$(dirname "$(dirname "$(dirname "$git55")")")
src=$(scripts/get-git.sh --source "$cache/git-2.55.0-src")

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
mkdir -p "$bin/shim" "$bin/installed"
CGO_ENABLED=0 go build -o "$bin/refretry" .
ln -s "$bin/refretry" "$bin/shim/git"
# git's test library keeps variables outside GIT_*, so refretry's log file reaches it.
cat >"$bin/installed/git" <<EOF
#!/bin/sh
REFRETRY_GIT='$git55' REFRETRY_LOG_FILE='$bin/log.jsonl' exec '$bin/shim/git' "\$@"
EOF
# runs COMMAND: how many summary records of that command the log file holds.
runs() { grep '"msg":"summary"' "$bin/log.jsonl" | grep -c "\"command\":\"$1\"" || true; }
chmod +x "$bin/installed/git"

failed=0
for format in files reftable; do
	for t in "${tests[@]}"; do
		: >"$bin/log.jsonl"
		rc=0
		out=$(cd "$src/t" && GIT_TEST_DEFAULT_REF_FORMAT=$format GIT_TEST_INSTALLED="$bin/installed" ./"$t" 2>&1) || rc=$?
		summary=$(printf '%s\n' "$out" | grep -E '^# (passed|failed|still have)|^1\.\.0 # SKIP' | tr '\n' ' ')
		printf '%s [%s]: %s(refretry ran update-ref %d times, fetch %d times, push %d times; retried attempts %d)\n' \
			"$t" "$format" "$summary" "$(runs update-ref)" "$(runs fetch)" "$(runs push)" \
			"$(grep '"msg":"attempt"' "$bin/log.jsonl" | grep -vc '"attempt":1,' || true)"
		if [ "$rc" != 0 ]; then
			failed=1
			printf '%s\n' "$out" | grep -E '^not ok' | grep -v '# TODO' | sed 's/^/    /'
		fi
	done
done
exit "$failed"
