#!/usr/bin/env bash
# collect-results.sh: the last job of a pipeline whose matrix jobs each pushed their
# result ref, refs/ci/<run>/<job> (with examples/push-matrix.sh, or the refretry
# Action's push input). It fetches them all, prints each job's report, and fails when
# fewer than EXPECTED arrived.
#
# Usage, from a checkout:
#
#   RESULTS_REMOTE=origin RUN_ID=$RUN EXPECTED=4 examples/collect-results.sh
#
# Each result ref is a commit whose tree holds the job's report file(s).
set -euo pipefail

: "${RESULTS_REMOTE:?set RESULTS_REMOTE}" "${RUN_ID:?set RUN_ID}"
prefix="refs/ci/${RUN_ID}"

git fetch -q "$RESULTS_REMOTE" "+${prefix}/*:${prefix}/*"
n=0
while read -r ref; do
	n=$((n + 1))
	echo "== ${ref#"$prefix/"} ($(git rev-parse --short "$ref"))"
	git ls-tree -r --name-only "$ref" | while IFS= read -r file; do
		git cat-file blob "$ref:$file"
	done
done < <(git for-each-ref --format='%(refname)' "$prefix/")
echo "${n} results for run ${RUN_ID}"
if [ -n "${EXPECTED:-}" ] && [ "$n" -lt "$EXPECTED" ]; then
	echo "collect-results.sh: expected ${EXPECTED} results, found ${n}" >&2
	exit 1
fi
