#!/usr/bin/env bash
# release.sh: the ref updates of a release script, with refretry instead of
# `git update-ref`. Tagging a release and moving the release branch used to be
#
#   git update-ref -m "release v$version" "refs/tags/v$version" "$commit" ""
#   git update-ref -m "release v$version" refs/heads/release "$commit" "$old"
#
# two calls that fail now and then with "cannot lock ref" (or, on reftable, "cannot
# lock references") when other jobs write refs of the same repository at the same time,
# and that can leave the tag without the branch when the second one fails. Here both go
# in one transaction through refretry: a busy lock is waited out and the transaction
# replayed whole, while a real conflict (the tag exists, someone else moved the branch
# since $old was read) fails at once with git's message and exit code 128.
#
# Usage: examples/release.sh <version> [<commit>]   (from inside the repository)
#
# Environment: REFRETRY, the refretry binary (default: refretry on PATH);
# REFRETRY_TIMEOUT, REFRETRY_MAX_ATTEMPTS, … as for every refretry command.
set -euo pipefail

version=${1:?usage: release.sh <version> [<commit>]}
commit=$(git rev-parse --verify --end-of-options "${2:-HEAD}^{commit}")
refretry=${REFRETRY:-refretry}
tag="refs/tags/v${version}"
branch="refs/heads/release"

# The branch as this script saw it: the update applies only if it is still there.
if old=$(git rev-parse -q --verify "$branch"); then
	move="update $branch $commit $old"
else
	move="create $branch $commit"
fi

# One transaction: both refs or neither. update-ref reads the commands from stdin.
printf '%s\n' "create $tag $commit" "$move" |
	"$refretry" update-ref -m "release v${version}" --stdin

echo "released v${version} at ${commit}"
