#!/usr/bin/env bash
# test.sh: everything CI checks, from a fresh machine. Provides git 2.55 (built once into
# a cache outside the repository), then checks formatting, vet and module tidiness, runs
# every test with the race detector against git 2.39 (system) and git 2.55, and smoke-runs
# the benchmark harness.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v go >/dev/null || { echo "test.sh: go is not installed" >&2; exit 1; }
if ! command -v git >/dev/null; then
	echo "test.sh: installing the system git" >&2
	apt-get update -qq && apt-get install -y -qq git >/dev/null
fi

# Nothing here may need Rust: a plain machine has no cargo, and under rustup a fresh
# HOME has no toolchain. Run everything with no cargo on PATH, and check that the git
# built for the tests was built without its optional Rust parts.
PATH=$(printf '%s\n' "$PATH" | tr ':' '\n' | while IFS= read -r d; do [ -e "$d/cargo" ] || printf '%s:' "$d"; done)
PATH=${PATH%:}
export PATH
REFRETRY_TEST_GIT=$(scripts/get-git.sh)
export REFRETRY_TEST_GIT
"$REFRETRY_TEST_GIT" version --build-options | grep -qx 'rust: disabled' ||
	{ echo "test.sh: $REFRETRY_TEST_GIT was built with Rust; scripts/get-git.sh must build it with NO_RUST"; exit 1; }
# A real forge, Gitea 1.26, for internal/harness/gitea and push's forge tests (built once per
# machine, about ten minutes cold on two cores, then cached like git).
REFRETRY_GITEA=$(scripts/gitea.sh build)
export REFRETRY_GITEA
export CGO_ENABLED=1 # the race detector needs cgo

echo "== gofmt, go vet, go mod tidy"
unformatted=$(gofmt -l .)
[ -z "$unformatted" ] || { echo "gofmt needed:"; echo "$unformatted"; exit 1; }
go vet ./...
cp go.mod /tmp/refretry-go.mod.$$ && cp go.sum /tmp/refretry-go.sum.$$
go mod tidy
if ! cmp -s go.mod /tmp/refretry-go.mod.$$ || ! cmp -s go.sum /tmp/refretry-go.sum.$$; then
	echo "go mod tidy changed go.mod/go.sum"; exit 1
fi
rm -f /tmp/refretry-go.mod.$$ /tmp/refretry-go.sum.$$

echo "== go test -race (git 2.39: $(git version), git 2.55: $REFRETRY_TEST_GIT)"
go test -race -count=1 -timeout 30m ./...

echo "== fuzz the input reader (bounded)"
go test -run '^$' -fuzz '^FuzzReader$' -fuzztime 20s ./transaction

echo "== benchmark harness smoke run"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/refretry" .
go run ./bench -git "$REFRETRY_TEST_GIT" -refretry "$bin/refretry" -quick >/dev/null

# Reliability suite (docs/reliability.md): the other parsers' fuzz targets, bounded,
# and a short model-checked soak (make soak runs the long one).
echo "== fuzz the parsers (bounded)"
for target in FuzzParseArgs FuzzClassify; do
	go test -run '^$' -fuzz "^$target\$" -fuzztime 10s ./transaction
done
for target in FuzzWorkflowEscape FuzzParseFormat; do
	go test -run '^$' -fuzz "^$target\$" -fuzztime 5s ./ci
done
for target in FuzzParsePorcelain FuzzClassify; do
	go test -run '^$' -fuzz "^$target\$" -fuzztime 5s ./push
done
go test -run '^$' -fuzz '^FuzzClassify$' -fuzztime 5s ./fetch
go test -run '^$' -fuzz '^FuzzShimParse$' -fuzztime 5s ./internal/shim
for target in FuzzParse FuzzDecodeRequest; do
	go test -run '^$' -fuzz "^$target\$" -fuzztime 5s ./internal/group
done
echo "== model-checked soak (short)"
go run ./internal/harness/soak -seconds 150 -git "$REFRETRY_TEST_GIT" -old-git "$(command -v git)" -refretry "$bin/refretry"

echo "== actionlint: the example workflows and a use of action.yml (pinned; the module proxy serves it)"
go run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12 examples/github/*.yml
# actionlint checks a local action (uses: ./) only inside a git project with
# .github/workflows: a throwaway one holding action.yml.
lint=$(mktemp -d)
mkdir -p "$lint/.git" "$lint/.github/workflows"
cp action.yml "$lint/"
cp testdata/actionlint/uses-action.yml "$lint/.github/workflows/"
go run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12 "$lint/.github/workflows/uses-action.yml"
rm -rf "$lint"
echo "== cross-compile refretry for the other platforms GitHub's runners have"
for target in darwin/amd64 darwin/arm64 windows/amd64 windows/arm64; do
	GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go build -o /dev/null . ||
		{ echo "cross-compiling for $target failed"; exit 1; }
done
scripts/release-check.sh # GoReleaser config, snapshot, install script, Action, GitLab component
echo "== all checks passed"
