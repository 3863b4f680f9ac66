#!/usr/bin/env bash
# get-gitlab-ci-local.sh: provide gitlab-ci-local (pinned), which runs GitLab CI/CD
# pipelines on this machine, in a cache directory outside the repository, and print the
# path of its executable on stdout. The runner tests (internal/harness/runners) use it.
#
# It comes from npm with npm's own client; its package.json and lockfile stay in the
# cache directory, never in the repository. Idempotent: when the cached install answers
# --version with the pinned version it only prints the path. gitlab-ci-local 4.75 calls
# Set.prototype.union, which Node 22 has; on an older Node (20) it runs with
# NODE_OPTIONS=--require=internal/harness/runners/testdata/set-methods.cjs, a small
# polyfill of the project's own, which the tests load.
#
# Environment:
#   REFRETRY_GITLAB_CI_LOCAL_CACHE  install prefix (default
#                                   ${XDG_CACHE_HOME:-$HOME/.cache}/refretry/gitlab-ci-local-<version>)
set -euo pipefail

version=4.75.1
prefix="${REFRETRY_GITLAB_CI_LOCAL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/refretry/gitlab-ci-local-${version}}"
bin="$prefix/node_modules/.bin/gitlab-ci-local"
here=$(cd "$(dirname "$0")/.." && pwd)
polyfill="$here/internal/harness/runners/testdata/set-methods.cjs"

log() { printf 'get-gitlab-ci-local: %s\n' "$*" >&2; }

installed() {
	[ -x "$bin" ] && [ "$(NODE_OPTIONS="--require=$polyfill" "$bin" --version 2>/dev/null)" = "$version" ]
}

if installed && command -v rsync >/dev/null; then
	printf '%s\n' "$bin"
	exit 0
fi
command -v rsync >/dev/null || { log "gitlab-ci-local copies the project with rsync: install it (apt-get install rsync)"; exit 1; }
command -v npm >/dev/null || { log "npm is needed to install gitlab-ci-local $version"; exit 1; }
mkdir -p "$prefix"
log "installing gitlab-ci-local@$version into $prefix"
npm install --no-audit --no-fund --save-exact --prefix "$prefix" "gitlab-ci-local@$version" >&2 ||
	{ log "npm install gitlab-ci-local@$version failed"; exit 1; }
installed || { log "$bin does not answer --version with $version"; exit 1; }
printf '%s\n' "$bin"
