#!/usr/bin/env bash
# The job's own commands (the component's run-script input): make the job's result and
# commit it, with refretry installed by the component. A refretry call first writes the
# component's log (.refretry/log.jsonl); git add -A, as a results job might, must not
# take it. What the test checks goes to RUNNERS_REPORT_DIR, outside the job.
set -euo pipefail
out="$RUNNERS_REPORT_DIR/shard-$SHARD"
mkdir -p "$out"
refretry update-ref "refs/runners/shard-$SHARD" HEAD
test -s .refretry/log.jsonl && cp .refretry/log.jsonl "$out/log.jsonl"
echo "shard $SHARD: 42 ops/s" > "shard-$SHARD.txt"
git add -A
git -c user.name=ci -c user.email=ci@example.com commit -q -m "result of shard $SHARD"
git status --porcelain --untracked-files=all > "$out/status"
