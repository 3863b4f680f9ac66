#!/usr/bin/env bash
# test.sh: the README's test command (tier 2 of docs/testing.md), and with --stress the
# stress tier (tier 3). .ci/run runs both, one after the other.
#
#   scripts/test.sh            tier 2, what a contributor runs before sending a change:
#                              provides git 2.55 (built once into a cache outside the
#                              repository), checks formatting, vet and module tidiness,
#                              runs tier 1 (go test ./..., every test at its default
#                              size, the fuzz targets' seed corpora included), the race
#                              detector over the packages with in-process concurrency
#                              and the root package's tests at their default size, a
#                              short model-checked soak, git's own update-ref tests
#                              through refretry, actionlint, and the cross-compiles.
#                              Neither Gitea nor GoReleaser is built.
#   scripts/test.sh --stress   tier 3, what tier 2 leaves out: the tests that
#                              testutil sizes (Scale, Stress, Hunt, Cells), at the stress size
#                              (REFRETRY_TEST_SCALE=stress) under the race detector,
#                              starting a refretry built without it; Gitea (built once,
#                              cached) and the tests against it; the bounded fuzz runs;
#                              the benchmark harness's smoke run; the long soak; the
#                              real-runner tests' place; the release check (GoReleaser).
#
# Tiers 1 and 2 keep go test's default limit of 10 minutes a package: a package that
# needs more is too big for them.
set -euo pipefail
cd "$(dirname "$0")/.."

stress=false
case "${1-}" in
"") ;;
--stress) stress=true ;;
*)
	echo "test.sh: unknown argument \"$1\"; usage: scripts/test.sh [--stress]" >&2
	exit 2
	;;
esac

command -v go >/dev/null || { echo "test.sh: go is not installed" >&2; exit 1; }
if ! command -v git >/dev/null; then
	echo "test.sh: installing the system git" >&2
	apt-get update -qq && apt-get install -y -qq git >/dev/null
fi
# The signed-commit tests sign with an SSH key and an OpenPGP key (testutil.NewSigner).
if ! command -v gpg >/dev/null || ! command -v ssh-keygen >/dev/null; then
	echo "test.sh: installing gnupg and openssh-client, for the signed-commit tests" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gnupg openssh-client >/dev/null
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
export CGO_ENABLED=1 # the race detector needs cgo

bin=$(mktemp -d)
suite= # the background git-suite.sh, in a session of its own: ended with the script
trap '[ -z "$suite" ] || kill -- -"$suite" 2>/dev/null; rm -rf "$bin"' EXIT
CGO_ENABLED=0 go build -o "$bin/refretry" .

now() { date +%s; }
step_start=$(now)
step() { # the next step's title; prints how long the one before took
	local t
	t=$(now)
	[ -z "${step_name-}" ] || echo "   ($step_name: $((t - step_start)) s)"
	step_name=$1 step_start=$t
	[ -z "$1" ] || echo "== $1"
}

# Fuzz budgets are execution counts, not durations: go1.26's fuzz coordinator
# can fail a run with a bare "context deadline exceeded" when a -fuzztime
# duration ends while a worker is mid-call (golang/go#75804, fixed in go1.27).
# A count has no deadline to race. Counts are about 5-15 s of work here.
fuzz() { go test -run '^$' -fuzz "^$2\$" -fuzztime "$3" "$1"; }

# stress_tests prints "<package dir> <test>" for every test whose size the knob chooses
# (testutil.Scale, Stress, Hunt, Cells, directly or through its package's helpers):
# the tests whose stress size differs from tier 2's.
stress_tests() { go run ./internal/harness/stresstests; }

# runner_tests runs the tests of the Action and the GitLab component inside real CI
# runners (act, gitlab-ci-local), too slow for tier 2.
runner_tests() {
	# gitlab-ci-local copies the project with rsync; act comes from the module proxy,
	# gitlab-ci-local from npm (scripts/get-gitlab-ci-local.sh).
	if ! command -v rsync >/dev/null; then
		echo "   installing rsync (gitlab-ci-local copies the project with it)"
		apt-get update -qq && apt-get install -y -qq rsync >/dev/null
	fi
	REFRETRY_RUNNERS=1 go test -count=1 -timeout 30m ./internal/harness/runners
}

if ! $stress; then
	step "gofmt, go vet, go mod tidy"
	unformatted=$(gofmt -l .)
	[ -z "$unformatted" ] || { echo "gofmt needed:"; echo "$unformatted"; exit 1; }
	go vet ./...
	cp go.mod "$bin/go.mod" && cp go.sum "$bin/go.sum"
	go mod tidy
	if ! cmp -s go.mod "$bin/go.mod" || ! cmp -s go.sum "$bin/go.sum"; then
		echo "go mod tidy changed go.mod/go.sum"; exit 1
	fi

	step "tier 1: go test ./... (git 2.39: $(git version), git 2.55: $REFRETRY_TEST_GIT)"
	go test -count=1 ./...

	# The race detector where refretry runs goroutines of its own: group commit's
	# leader, the engine, the --stdin session proxy (transaction), the reporter,
	# gitexec, push, fetch, gather; and, in the root package, whose tests start the
	# race-instrumented test binary as refretry (main_test.go), the tests that drive
	# those goroutines in one process: the --stdin proxy, the log writers, signals,
	# the group-commit leader, the shim, push and fetch. Its process storms, kill
	# rounds, git's scripts, examples and Action tests ran in tier 1 above; the stress
	# tier runs the storms at full size under -race.
	# The tests that start many jobs at once (TestShimPushAutoCommit, TestPushMatrixExample,
	# TestFetchCommand, TestShimConcurrent) or a third-party tool (TestShimFilterRepo)
	# add processes, not goroutines: they ran in tier 1.
	root_race='^(TestStdinFromFile|TestBatchUpdates.*|TestLog(PlainIsDropIn|Formats|GitHubActions|StdinAndConfig|Outcomes|Note.*)|TestSIGTERMWhileWaiting|TestGatherSIGTERM|TestSignalEarly|TestCoalesce(SameRef|Patience|Off)|TestShim(External|PushProgressSameAsGit|PushProgressTerminal|PushSameAsGit|Passthrough|UpdateRef|Retries|UnderRefretry|NoLoop)|TestPush(SameAsGit|LockHeldCLI|GitMissing|LogFile|NamesPush|AtomicUnsupported|ForgeRuleCLI|ForgeMessagesCLI)|TestFetch(NamesFetch|Help)|TestRefusedRemote|TestHeldLockReleased|TestInteractiveLockAtPrepare|TestBadInput|TestReliabilityKillMidInput)$'
	step "go test -race: the packages with in-process concurrency, and the root package's tests of refretry's goroutines"
	# git's own update-ref tests spend about half their time in lock waits of git's
	# (docs/reliability.md): they run beside the race detector's step, which keeps
	# the cores busy meanwhile, and their output is printed when they end.
	echo "   git's own tests of update-ref, through refretry, started beside it (make git-suite runs more)"
	setsid scripts/git-suite.sh t1400-update-ref.sh t1404-update-ref-errors.sh >"$bin/git-suite.log" 2>&1 &
	suite=$!
	go test -race -count=1 ./internal/group ./internal/engine ./transaction ./internal/report \
		./internal/gitexec ./push ./fetch ./gather
	go test -race -count=1 -run "$root_race" .

	step "model-checked soak (short; make soak and the stress tier run longer ones)"
	go run ./internal/harness/soak -seconds 60 -git "$REFRETRY_TEST_GIT" -old-git "$(command -v git)" -refretry "$bin/refretry"

	step "git's own tests of update-ref, through refretry: waiting for them"
	suite_ok=true
	wait "$suite" || suite_ok=false
	suite=
	cat "$bin/git-suite.log"
	$suite_ok || { echo "git's own update-ref tests failed through refretry"; exit 1; }

	step "actionlint: the example workflows and a use of action.yml (pinned; the module proxy serves it)"
	go run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12 examples/github/*.yml
	# actionlint checks a local action (uses: ./) only inside a git project with
	# .github/workflows: a throwaway one holding action.yml.
	lint=$bin/lint
	mkdir -p "$lint/.git" "$lint/.github/workflows"
	cp action.yml "$lint/"
	cp testdata/actionlint/uses-action.yml "$lint/.github/workflows/"
	go run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12 "$lint/.github/workflows/uses-action.yml"

	step "cross-compile refretry for the other platforms GitHub's runners have"
	for target in darwin/amd64 darwin/arm64 windows/amd64 windows/arm64; do
		GOOS=${target%/*} GOARCH=${target#*/} CGO_ENABLED=0 go build -o /dev/null . ||
			{ echo "cross-compiling for $target failed"; exit 1; }
	done
	step ""
	echo "== tier 2: all checks passed (scripts/test.sh --stress runs the stress tier)"
	exit 0
fi

# A real forge, Gitea 1.26, for internal/harness/gitea and push's and forge's tests (built once
# per machine, about ten minutes cold on two cores, then cached like git).
step "Gitea for the forge tests (scripts/gitea.sh build)"
REFRETRY_GITEA=$(scripts/gitea.sh build)
export REFRETRY_GITEA

# The tests that testutil sizes, at the stress size and under the race detector. The
# processes they start are $bin/refretry, built without the race detector
# (REFRETRY_TEST_REFRETRY, main_test.go): their thousands of starts would otherwise
# each pay the instrumented binary's start-up, while the test processes stay
# instrumented. At this size a package may take more than go test's default
# 10 minutes on two cores (TestCoalesceMixed starts 1,800 processes), hence -timeout;
# and the storms run as many at once as Go's default lets, one test per CPU, not the
# two that testutil.RaiseParallel lets the waiting tests of tiers 1 and 2 run.
export REFRETRY_TEST_SCALE=stress REFRETRY_TEST_REFRETRY=$bin/refretry
stress_tests >"$bin/stress-tests"
for dir in $(cut -d' ' -f1 "$bin/stress-tests" | sort -u); do
	names=$(awk -v d="$dir" '$1 == d { print $2 }' "$bin/stress-tests" | paste -sd'|')
	step "go test -race at stress size: $dir: $names"
	go test -race -count=1 -timeout 30m -parallel "$(nproc)" -run "^($names)\$" "$dir"
done

step "go test -race: the forge tests against Gitea (skipped in tiers 1 and 2)"
go test -race -count=1 ./internal/harness/gitea
go test -race -count=1 -run '^TestGitea' ./push ./forge

step "fuzz the parsers (bounded)"
fuzz ./transaction FuzzReader 400000x
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

step "benchmark harness smoke run"
go run ./bench -git "$REFRETRY_TEST_GIT" -refretry "$bin/refretry" -quick >/dev/null

step "model-checked soak (long)"
go run ./internal/harness/soak -seconds 300 -git "$REFRETRY_TEST_GIT" -old-git "$(command -v git)" -refretry "$bin/refretry"

step "the Action and the GitLab component inside real CI runners"
runner_tests

step "release check (GoReleaser, built once and cached)"
scripts/release-check.sh # GoReleaser config, snapshot, install script, Action, GitLab component
step ""
echo "== tier 3: all stress checks passed"
