#!/usr/bin/env bash
# demo.sh: the main job on a built-in default. Provides git 2.55, builds refretry, and
# races N (default 300) concurrent writers of distinct refs into a throwaway reftable
# repository with each of the usual answers to lock contention: plain git update-ref,
# git with reftable.lockTimeout=5000, flock(1) around git, and refretry (its group
# commit is on by default; --coalesce asks for it outright, REFRETRY_COALESCE=0 shows
# the retrying path without it). Beside them, the floor: N empty Go programs started
# the same way, which is what any client written in Go costs before it does anything.
# Each round runs every tool once, in an order rotated by round; the table has the
# medians of R rounds (default 3): refs written, wall time, CPU time, and each tool's
# wall time as a multiple of refretry's and of the floor's.
set -euo pipefail
export LC_ALL=C
cd "$(dirname "$0")/.."
n=${1:-300}
rounds=${2:-3}
case $n in '' | *[!0-9]* | 0) echo "usage: $0 [writers] [rounds]" >&2 && exit 2 ;; esac
case $rounds in '' | *[!0-9]* | 0) echo "usage: $0 [writers] [rounds]" >&2 && exit 2 ;; esac
git=$(scripts/get-git.sh)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/bin/refretry" .
# The floor, built as refretry is: a Go program whose main returns at once.
mkdir -p "$tmp/empty"
printf 'package main\n\nfunc main() {}\n' >"$tmp/empty/main.go"
printf 'module empty\n\ngo 1.21\n' >"$tmp/empty/go.mod"
(cd "$tmp/empty" && CGO_ENABLED=0 GOFLAGS= go build -o "$tmp/bin/empty" .)
export REFRETRY_GIT="$git"

# cpu FILE: user+system seconds of waited-for children, from the second line of `times`.
cpu() {
	awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, t, "m"); sub("s", "", t[2]); s += t[1] * 60 + t[2] } }
		END { printf "%.2f", s }' "$1"
}

runs=0
race() { # race <tool number> <command...>: N writers at once on a fresh repository
	local tool=$1
	shift
	runs=$((runs + 1))
	local repo="$tmp/repos/$runs" err="$tmp/$tool.err"
	"$git" init -q --ref-format=reftable "$repo"
	"$git" -C "$repo" -c user.name=demo -c user.email=demo@example.com commit -q --allow-empty -m demo
	local oid start end ok
	oid=$("$git" -C "$repo" rev-parse HEAD)
	: >"$tmp/round.err"
	cd "$repo" # the writers start here, as a CI job would
	# `times` and $EPOCHREALTIME run in this shell, so no process of their own is counted.
	times >"$tmp/t0"
	start=${EPOCHREALTIME:-$(date +%s.%N)}
	for ((i = 1; i <= n; i++)); do
		"$@" "refs/heads/demo/$i" "$oid" 2>>"$tmp/round.err" &
	done
	wait
	end=${EPOCHREALTIME:-$(date +%s.%N)}
	times >"$tmp/t1"
	cd - >/dev/null
	ok=$("$git" -C "$repo" for-each-ref refs/heads/demo | awk -v oid="$oid" '$1 == oid' | wc -l)
	# One line per round: refs written, wall seconds, CPU seconds.
	printf '%d %s %s\n' "$ok" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')" \
		"$(awk -v a="$(cpu "$tmp/t0")" -v b="$(cpu "$tmp/t1")" 'BEGIN { print b - a }')" >>"$tmp/$tool.runs"
	cat "$tmp/round.err" >>"$err"
	rm -rf "$repo"
}

labels=("N empty Go programs (the floor)" "git update-ref" "git -c reftable.lockTimeout=5000"
	"flock(1) .git/reftable + git" "refretry" "refretry --coalesce" "refretry, group commit off")
writes=(0 1 1 1 1 1 1) # the floor writes no ref
flock=$(command -v flock || true)
run_tool() {
	case $1 in
	0) race 0 "$tmp/bin/empty" ;;
	1) race 1 "$git" update-ref ;;
	2) race 2 "$git" -c reftable.lockTimeout=5000 update-ref ;;
	3) if [ -n "$flock" ]; then race 3 "$flock" .git/reftable "$git" update-ref; fi ;;
	4) race 4 "$tmp/bin/refretry" ;;
	5) race 5 "$tmp/bin/refretry" --coalesce ;;
	6) REFRETRY_COALESCE=0 race 6 "$tmp/bin/refretry" ;;
	esac
}

echo "$n concurrent writers, distinct refs, one reftable repository each ($("$git" version), $rounds rounds)"
echo "machine: $(nproc) CPUs, $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || uname -m), load average $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown) at the start"
for ((r = 0; r < rounds; r++)); do
	for ((k = 0; k < ${#labels[@]}; k++)); do
		run_tool $(((r + k) % ${#labels[@]}))
	done
	echo "round $((r + 1)) of $rounds done" >&2
done

# median COLUMN FILE: the median of one column of a tool's rounds.
median() {
	sort -g -k"$1" "$2" | awk -v c="$1" '{ v[NR] = $c } END { m = int((NR + 1) / 2); print (NR % 2) ? v[m] : (v[m] + v[m + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "n/a" }'; }

rr_wall=$(median 2 "$tmp/4.runs")
floor_wall=$(median 2 "$tmp/0.runs")
echo
echo "| tool                             | refs written  | wall time | CPU time | ÷ refretry | ÷ floor |"
echo "|----------------------------------|---------------|-----------|----------|------------|---------|"
for ((k = 0; k < ${#labels[@]}; k++)); do
	if [ ! -s "$tmp/$k.runs" ]; then
		printf '| %-32s | %-13s | %9s | %8s | %10s | %7s |\n' "${labels[$k]}" "not installed" "" "" "" ""
		continue
	fi
	wall=$(median 2 "$tmp/$k.runs")
	written="n/a"
	if [ "${writes[$k]}" = 1 ]; then # the fewest refs any round wrote
		written="$(sort -n "$tmp/$k.runs" | head -1 | cut -d' ' -f1) / $n"
	fi
	printf '| %-32s | %-13s | %7.2f s | %6.2f s | %10s | %7s |\n' "${labels[$k]}" "$written" "$wall" \
		"$(median 3 "$tmp/$k.runs")" "$(ratio "$wall" "$rr_wall")" "$(ratio "$wall" "$floor_wall")"
done
echo
echo "Medians of $rounds rounds; refs written: the fewest in any round. CPU time: user+system of all N"
echo "writers and the processes they waited for (bash's times). ÷ refretry and ÷ floor: median wall"
echo "time over refretry's and over that of N empty Go programs started the same way."
failures=""
for ((k = 1; k < ${#labels[@]}; k++)); do
	if [ -s "$tmp/$k.err" ]; then # the most common failure, with ref names folded together
		failures+="${labels[$k]}: $(sed "s|'refs/[^']*'|'<ref>'|" "$tmp/$k.err" | sort | uniq -c | sort -rn | head -1 | sed 's/^ *//')"$'\n'
	fi
done
if [ -n "$failures" ]; then
	echo
	echo "Most common failure over all rounds (count, message):"
	printf '%s' "$failures"
fi
