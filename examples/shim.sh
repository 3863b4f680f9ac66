#!/usr/bin/env bash
# shim.sh: run a tool you cannot change (a release script, a build system, a bot) with
# refretry's retries for every `git update-ref` it runs, through the git shim.
#
# Usage: examples/shim.sh <command> [<argument>...]
#   e.g. examples/shim.sh ./scripts/publish.sh 1.2.3
#
# The shim is refretry under the name git, in a directory put first on PATH for the
# command only. `git update-ref` calls are retried on lock contention as
# `refretry update-ref` would; every other git command goes to the real git unchanged
# (the same process, output and exit code). In CI, `refretry shim install` once per job
# is enough (in GitHub Actions it also adds the directory to GITHUB_PATH for later
# steps; the refretry Action does it with install-shim: true).
#
# Environment: REFRETRY, the refretry binary (default: refretry on PATH);
# REFRETRY_TIMEOUT, REFRETRY_MAX_ATTEMPTS, … apply to the tool's update-ref calls.
set -euo pipefail

[ $# -gt 0 ] || { echo "usage: shim.sh <command> [<argument>...]" >&2; exit 2; }
refretry=${REFRETRY:-refretry}
dir=$(mktemp -d)
trap '"$refretry" shim uninstall --dir "$dir" 2>/dev/null || true; rm -rf "$dir"' EXIT

# install prints the PATH line to use; here the directory is known, so set PATH directly.
"$refretry" shim install --dir "$dir" >/dev/null
PATH="$dir:$PATH" "$@"
