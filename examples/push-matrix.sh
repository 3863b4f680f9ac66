#!/usr/bin/env bash
# push-matrix.sh: publish one matrix job's result to a shared results repository with
# `refretry push`, so that dozens of jobs finishing at once neither fail on the server's
# ref lock nor hang on a stalled transfer, while real conflicts still fail at once.
#
# Usage, from a job's checkout (any CI system):
#
#   RESULTS_REMOTE=https://git.example.com/ci/results.git \
#   RUN_ID=$CI_PIPELINE_ID JOB_ID=$CI_JOB_NAME \
#     examples/push-matrix.sh path/to/report.json
#
# Each job commits its report on top of the commit it tested and pushes it to its own ref,
# refs/ci/<run>/<job>; with APPEND_BRANCH set, it also appends the commit to that branch
# of the results repository, rebasing onto whatever the other jobs pushed meanwhile.
#
# Environment:
#   RESULTS_REMOTE  remote name or URL to push to (required)
#   RUN_ID, JOB_ID  name the result ref (required)
#   APPEND_BRANCH   optional: a branch every job appends its commit to, e.g. ci-log
#   REFRETRY        the refretry binary (default: refretry on PATH)
#   REFRETRY_TIMEOUT, REFRETRY_MAX_ATTEMPTS, …  the budget, as for every refretry command
set -euo pipefail

report=${1:?usage: push-matrix.sh <report file>}
: "${RESULTS_REMOTE:?set RESULTS_REMOTE}" "${RUN_ID:?set RUN_ID}" "${JOB_ID:?set JOB_ID}"
refretry=${REFRETRY:-refretry}
ref="refs/ci/${RUN_ID}/${JOB_ID}"

# The result is a commit of its own: the report file alone, with the tested commit as parent.
# It is dated as the tested commit, so that a retried job (CI's "retry" button) with the
# same report makes the very same commit.
blob=$(git hash-object -w -- "$report")
tree=$(printf '100644 blob %s\t%s\n' "$blob" "$(basename -- "$report")" | git mktree)
date=$(git log -1 --format=%cI HEAD)
commit=$(GIT_AUTHOR_DATE=$date GIT_COMMITTER_DATE=$date git commit-tree -p HEAD -m "CI result: run ${RUN_ID}, job ${JOB_ID}" "$tree")

if [ -z "${APPEND_BRANCH:-}" ]; then
	# One ref per job: only the server's lock and the network can get in the way, and
	# refretry retries exactly those. A retried job whose earlier attempt pushed the same
	# report finds the ref already there and succeeds; one whose report changed between
	# attempts is a real conflict: it fails at once with git's message, and the earlier
	# attempt's result stays (delete the ref to record the new one).
	exec "$refretry" push "$RESULTS_REMOTE" "${commit}:${ref}"
fi

# Appending to a shared branch: the job's report goes to results/<run>/<job>-<file> in a
# commit on top of the branch, made in a throw-away worktree (--rebase needs the branch
# checked out). Distinct paths per job mean the rebases never conflict. Both refs go in
# one atomic push.
work=$(mktemp -d)
branch="refretry-append-${RUN_ID}-${JOB_ID}"
trap 'git worktree remove --force "$work" >/dev/null 2>&1 || true; git branch -q -D "$branch" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git fetch -q "$RESULTS_REMOTE" "refs/heads/${APPEND_BRANCH}"
git worktree add -q -b "$branch" "$work" FETCH_HEAD
mkdir -p "$work/results/${RUN_ID}"
cp -- "$report" "$work/results/${RUN_ID}/${JOB_ID}-$(basename -- "$report")"
git -C "$work" add results
git -C "$work" commit -q -m "CI result: run ${RUN_ID}, job ${JOB_ID}"
"$refretry" -C "$work" push --rebase "$RESULTS_REMOTE" \
	"HEAD:refs/heads/${APPEND_BRANCH}" "${commit}:${ref}"
