#!/usr/bin/env bash
# release-check.sh: what a release would ship, checked without publishing anything
# (docs/releasing.md). Called by scripts/test.sh; runs alone too.
#
#   1. goreleaser check on .goreleaser.yaml (goreleaser v2.15.1, built once with
#      go install into ~/.cache/refretry/goreleaser-v2.15.1, or under XDG_CACHE_HOME,
#      and reused).
#   2. A snapshot release of the current checkout (every archive and checksums.txt)
#      into a temporary dist directory: nothing is written in the tree.
#   3. The linux/amd64 binary of that snapshot prints its stamped version and commit.
#   4. A release as a tag would make it (snapshot mode makes no changelog): in a
#      throwaway clone of HEAD with two throwaway tags, goreleaser release without
#      publishing (linux/amd64 only); its changelog lists HEAD's commit, its binary
#      says the tag.
#   5. internal/harness/releasetest and the root's TestActionRelease with REFRETRY_RELEASE_DIST
#      set: the archives against checksums.txt; static, stripped binaries; `refretry
#      version` of a stamped, a go install and a plain go build;
#      scripts/action-install.sh and the whole Action against a local HTTP server
#      serving the snapshot (good and warm, corrupted archive, missing checksum line,
#      missing checksums.txt, missing archive); templates/refretry.yml parsed, held to
#      action.yml and the install script, and its job run with bash as a runner would.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

goreleaser_version=v2.15.1
cache=${XDG_CACHE_HOME:-$HOME/.cache}/refretry/goreleaser-$goreleaser_version # as scripts/get-git.sh
goreleaser=$cache/goreleaser
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

if ! command -v curl >/dev/null; then # the install script downloads with curl
	echo "release-check.sh: installing curl" >&2
	apt-get update -qq && apt-get install -y -qq curl >/dev/null
fi

echo "== release: goreleaser $goreleaser_version"
if [ -x "$goreleaser" ] && "$goreleaser" --version >/dev/null 2>&1; then
	echo "using $goreleaser (cached)"
else
	t=$(now)
	# GOFLAGS cleared and the go env file ignored (an empty GOFLAGS alone still reads
	# it): the caller's settings are for refretry's module, not goreleaser's.
	GOENV=off GOFLAGS='' GOBIN=$cache CGO_ENABLED=0 go install "github.com/goreleaser/goreleaser/v2@$goreleaser_version"
	echo "timing: cold goreleaser install: $(since "$t")"
fi

echo "== release: goreleaser check"
"$goreleaser" check --config .goreleaser.yaml

# goreleaser has no flag for its output directory: a copy of the configuration with
# dist set to a temporary directory keeps the tree clean, worktree or clone alike.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dist=$work/dist
cp .goreleaser.yaml "$work/goreleaser.yaml"
printf '\ndist: %s\n' "$dist" >>"$work/goreleaser.yaml"

echo "== release: snapshot build (all platforms, no publishing)"
# goreleaser reads the commit only after the remote's URL, and in snapshot mode an
# error there leaves it as "none": give a checkout without a remote (a worktree made
# from a local repository) one through the environment, not its config.
if [ -z "$(git remote)" ]; then
	export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/refretry/refretry.git
fi
t=$(now)
"$goreleaser" release --snapshot --clean --config "$work/goreleaser.yaml" >"$work/snapshot.log" 2>&1 ||
	{ cat "$work/snapshot.log"; echo "goreleaser snapshot failed"; exit 1; }
echo "timing: snapshot build: $(since "$t")"
for f in "$dist"/*.tar.gz "$dist"/*.zip "$dist"/checksums.txt; do echo "  ${f##*/}"; done
if [ -n "$(git status --porcelain --ignored -- dist)" ]; then
	echo "goreleaser wrote into the tree:"; git status --porcelain --ignored -- dist; exit 1
fi

echo "== release: the linux/amd64 binary says its version and commit"
commit=$(git rev-parse HEAD)
bin=$(find "$dist" -path '*linux_amd64*' -name refretry -type f | head -n 1)
[ -n "$bin" ] || { echo "no linux/amd64 binary in $dist"; exit 1; }
"$bin" version | tee "$work/version.txt"
grep -qE "^refretry version v[0-9]+\.[0-9]+\.[0-9]+-snapshot-" "$work/version.txt" || { echo "no snapshot version"; exit 1; }
grep -qE "^commit: $commit( \(modified\))?$" "$work/version.txt" || { echo "commit is not $commit"; exit 1; }

unset GIT_CONFIG_COUNT GIT_CONFIG_KEY_0 GIT_CONFIG_VALUE_0

echo "== release: a tagged release, not published (changelog, stamped version)"
clone=$work/clone
git clone -q --no-tags "$root" "$clone"
previous=$(git -C "$clone" rev-list --max-count=4 HEAD | tail -n 1)
git -C "$clone" tag v0.0.1 "$previous"
git -C "$clone" tag v0.0.2 HEAD
# The snapshot built every platform already: linux/amd64 alone here (a third of the time).
sed -e "s|^dist: .*|dist: $work/tagged|" -e 's|^    goos: .*|    goos: [linux]|' \
	-e 's|^    goarch: .*|    goarch: [amd64]|' "$work/goreleaser.yaml" >"$work/tagged.yaml"
t=$(now)
(cd "$clone" && GORELEASER_CURRENT_TAG=v0.0.2 GORELEASER_PREVIOUS_TAG=v0.0.1 \
	"$goreleaser" release --clean --skip=publish,announce,validate --config "$work/tagged.yaml") \
	>"$work/tagged.log" 2>&1 || { cat "$work/tagged.log"; echo "goreleaser release failed"; exit 1; }
echo "timing: tagged release build: $(since "$t")"
subject=$(git log -1 --format=%s HEAD)
grep -qF -- "$subject" "$work/tagged/CHANGELOG.md" ||
	{ cat "$work/tagged/CHANGELOG.md"; echo "the changelog does not list HEAD ($subject)"; exit 1; }
echo "changelog: $(grep -c '^\* ' "$work/tagged/CHANGELOG.md") commits since v0.0.1"
"$work"/tagged/refretry_linux_amd64_v1/refretry version | sed -n 1,2p | tee "$work/tagged-version.txt"
grep -qx "refretry version v0.0.2" "$work/tagged-version.txt" || { echo "the tagged build is not v0.0.2"; exit 1; }

echo "== release: go test ./internal/harness/releasetest and the Action (install script, GitLab component, builds)"
export REFRETRY_RELEASE_DIST=$dist REFRETRY_RELEASE_COMMIT=$commit
run_tests() { # go test's arguments
	go test -count=1 -v -timeout 20m "$@" >"$work/test.log" 2>&1 ||
		{ cat "$work/test.log"; echo "go test $* failed"; exit 1; }
	grep -E '^\s*(--- (PASS|FAIL|SKIP)|.*timing:)' "$work/test.log" | sed 's/^ *//'
	tail -n 1 "$work/test.log"
}
run_tests ./internal/harness/releasetest
run_tests -run '^TestActionRelease$' .
