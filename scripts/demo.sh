#!/usr/bin/env bash
# demo.sh: the main job on a built-in default. Provides git 2.55, builds refretry, and
# races N (default 300) concurrent writers of distinct refs into a throwaway reftable
# repository with each of the usual answers to lock contention: plain git update-ref,
# git with reftable.lockTimeout=5000, flock(1) around git, and refretry (its group
# commit is on by default; --coalesce asks for it outright, REFRETRY_COALESCE=0 shows
# the retrying path without it). Prints refs written, wall time and CPU time for each.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
n=${1:-300}
case $n in '' | *[!0-9]* | 0) echo "usage: $0 [writers]" >&2 && exit 2 ;; esac
git=$(scripts/get-git.sh)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/bin/refretry" .
export REFRETRY_GIT="$git"

# cpu FILE: user+system seconds of waited-for children, from the second line of `times`.
cpu() {
	awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, "m"); sub("s", "", t[2]); s += t[1] * 60 + t[2] } }
		END { printf "%.2f", s }' "$1"
}

runs=0
race() { # race <label> <command...>: N writers at once on a fresh repository
	local label=$1
	shift
	runs=$((runs + 1))
	local repo="$tmp/repos/$runs" err="$tmp/$runs.err"
	"$git" init -q --ref-format=reftable "$repo"
	"$git" -C "$repo" -c user.name=demo -c user.email=demo@example.com commit -q --allow-empty -m demo
	local oid start end ok
	oid=$("$git" -C "$repo" rev-parse HEAD)
	: >"$err"
	cd "$repo" # the writers start here, as a CI job would
	# `times` and $EPOCHREALTIME run in this shell, so no process of their own is counted.
	times >"$tmp/t0"
	start=${EPOCHREALTIME:-$(date +%s.%N)}
	for ((i = 1; i <= n; i++)); do
		"$@" "refs/heads/demo/$i" "$oid" 2>>"$err" &
	done
	wait
	end=${EPOCHREALTIME:-$(date +%s.%N)}
	times >"$tmp/t1"
	cd - >/dev/null
	ok=$("$git" -C "$repo" for-each-ref refs/heads/demo | awk -v oid="$oid" '$1 == oid' | wc -l)
	printf '| %-32s | %5d / %-5d | %7.2f s | %6.2f s |\n' "$label" "$ok" "$n" \
		"$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" \
		"$(awk -v a="$(cpu "$tmp/t0")" -v b="$(cpu "$tmp/t1")" 'BEGIN { print b - a }')"
	if [ -s "$err" ]; then # the most common failure, with ref names folded together
		printf '%s: %s\n' "$label" "$(sed "s|'refs/[^']*'|'<ref>'|" "$err" | sort | uniq -c | sort -rn | head -1 | sed 's/^ *//')" >>"$tmp/failures"
	fi
	rm -rf "$repo"
}

echo "$n concurrent writers, distinct refs, one reftable repository each ($("$git" version), $(nproc) CPUs)"
echo
echo "| tool                             | refs written  | wall time | CPU time |"
echo "|----------------------------------|---------------|-----------|----------|"
race "git update-ref" "$git" update-ref
race "git -c reftable.lockTimeout=5000" "$git" -c reftable.lockTimeout=5000 update-ref
if flock=$(command -v flock); then
	race "flock(1) .git/reftable + git" "$flock" .git/reftable "$git" update-ref
else
	printf '| %-32s | %-13s | %9s | %8s |\n' "flock(1) .git/reftable + git" "not installed" "" ""
fi
race "refretry" "$tmp/bin/refretry"
race "refretry --coalesce" "$tmp/bin/refretry" --coalesce
REFRETRY_COALESCE=0 race "refretry, group commit off" "$tmp/bin/refretry"
echo
echo "CPU time: user+system of all N writers and the processes they waited for (bash's times)."
if [ -s "$tmp/failures" ]; then
	echo
	echo "Most common failure (count, message):"
	cat "$tmp/failures"
fi
