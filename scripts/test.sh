#!/usr/bin/env bash
# test.sh: everything CI checks, from a fresh machine. Provides git 2.55 (built once into
# a cache outside the repository), then checks formatting, vet and module tidiness, runs
# every test with the race detector against git 2.39 (system) and git 2.55, smoke-runs
# the benchmark harness, and runs git's own update-ref tests through refretry.
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
go test -race -count=1 -timeout 45m ./...

# Fuzz budgets are execution counts, not durations: go1.26's fuzz coordinator
# can fail a run with a bare "context deadline exceeded" when a -fuzztime
# duration ends while a worker is mid-call (golang/go#75804, fixed in go1.27).
# A count has no deadline to race. Counts are about 5-15 s of work here.
fuzz() { go test -run '^$' -fuzz "^$2\$" -fuzztime "$3" "$1"; }

echo "== fuzz the input reader (bounded)"
fuzz ./transaction FuzzReader 400000x

echo "== benchmark harness smoke run"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/refretry" .
go run ./bench -git "$REFRETRY_TEST_GIT" -refretry "$bin/refretry" -quick >/dev/null

# Reliability suite (docs/reliability.md): the other parsers' fuzz targets, bounded,
# and a short model-checked soak (make soak runs the long one).
echo "== fuzz the parsers (bounded)"
fuzz ./transaction FuzzParseArgs 300000x
fuzz ./transaction FuzzClassify 200000x
fuzz ./ci FuzzWorkflowEscape 150000x
fuzz ./ci FuzzParseFormat 80000x
fuzz ./push FuzzParsePorcelain 60000x
fuzz ./push FuzzClassify 40000x
fuzz ./fetch FuzzClassify 60000x
fuzz ./internal/shim FuzzShimParse 250000x
fuzz ./internal/group FuzzParse 150000x
fuzz ./internal/group FuzzDecodeRequest 150000x
echo "== model-checked soak (short)"
go run ./internal/harness/soak -seconds 150 -git "$REFRETRY_TEST_GIT" -old-git "$(command -v git)" -refretry "$bin/refretry"

echo "== git's own tests of update-ref, through refretry (make git-suite runs more)"
scripts/git-suite.sh t1400-update-ref.sh t1404-update-ref-errors.sh

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
