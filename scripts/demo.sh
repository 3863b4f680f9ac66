#!/usr/bin/env bash
# demo.sh: the main job on a built-in default. Provides git 2.55, builds refretry, and
# races N (default 300) concurrent writers of distinct refs into a throwaway reftable
# repository, first with plain git update-ref, then with refretry, then with refretry's
# group commit (--coalesce), and prints a table.
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-300}
git=$(scripts/get-git.sh)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/bin/refretry" .

race() { # race <label> <command...>: N writers at once on a fresh repository
	local label=$1; shift
	local repo="$tmp/repos/$label"
	"$git" init -q --ref-format=reftable "$repo"
	GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.com GIT_COMMITTER_NAME=demo \
		GIT_COMMITTER_EMAIL=demo@example.com "$git" -C "$repo" commit -q --allow-empty -m demo
	local oid start end ok
	oid=$("$git" -C "$repo" rev-parse HEAD)
	start=$(date +%s.%N)
	for i in $(seq "$n"); do
		(cd "$repo" && REFRETRY_GIT="$git" "$@" "refs/heads/demo/$i" "$oid" 2>>"$tmp/$label.err") &
	done
	wait || true
	end=$(date +%s.%N)
	ok=$("$git" -C "$repo" for-each-ref refs/heads/demo | awk -v oid="$oid" '$1 == oid' | wc -l)
	printf '| %-26s | %4d / %d | %6.2f s |\n' "$label" "$ok" "$n" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"
}

echo "$n concurrent writers, distinct refs, one reftable repository ($("$git" version))"
echo
echo "| tool                       | refs written | wall time |"
echo "|----------------------------|--------------|-----------|"
race "git update-ref" "$git" update-ref
race "refretry" "$tmp/bin/refretry"
race "refretry --coalesce" "$tmp/bin/refretry" --coalesce
echo
echo "plain git failures: $(sed "s|'refs/[^']*'|'<ref>'|" "$tmp/git update-ref.err" 2>/dev/null | sort | uniq -c | sort -rn | head -1 | sed 's/^ *//')"
