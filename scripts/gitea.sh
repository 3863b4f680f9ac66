#!/usr/bin/env bash
# gitea.sh: provide a Gitea v1.26.0 binary (with SQLite, templates and options embedded)
# in a cache directory outside the repository, for internal/harness/gitea's tests and the
# benchmarks (docs: /work/shared/docs/forges.md section 4).
#
#   scripts/gitea.sh build   print the path of the cached binary on stdout, building it
#                            first when it is missing or does not run
#
# Idempotent and quiet: when the cached binary exists and answers --version it prints
# only the path. Loud on failure: a step that fails stops the script with a non-zero
# exit and a message on stderr; it never falls back to another Gitea. Progress and the
# cold build's timing go to stderr, never stdout.
#
# The source comes from the Go module proxy (Go's own default, or whatever GOPROXY the
# environment names): go mod download, then a writable copy in a temporary directory,
# so nothing is written into this repository or into the module cache's read-only tree.
# The build ignores the caller's Go settings (go env file, GOFLAGS, workspace,
# toolchain switching, target platform): those are for refretry's module, not Gitea's.
# GOPROXY and the like still come from the environment when set there.
#
# Environment:
#   REFRETRY_GITEA_CACHE  directory of the binary
#                         (default ${XDG_CACHE_HOME:-$HOME/.cache}/refretry/gitea-v1.26.0)
set -euo pipefail

version=v1.26.0
module=code.gitea.io/gitea
tags='bindata sqlite sqlite_unlock_notify'
cache="${REFRETRY_GITEA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/refretry/gitea-$version}"
bin="$cache/gitea"

log() { printf 'gitea.sh: %s\n' "$*" >&2; }
die() { printf 'gitea.sh: FAILED: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

# works: the cached binary runs and says it is this version.
works() {
	[ -x "$bin" ] || return 1
	"$bin" --version 2>/dev/null | grep -qi "^gitea version ${version#v} " || return 1
}

case "${1:-}" in
build) ;;
*)
	echo "usage: scripts/gitea.sh build" >&2
	exit 2
	;;
esac

if works; then
	printf '%s\n' "$bin"
	exit 0
fi

mkdir -p "$cache" || die "cannot create $cache"
# One build at a time per cache: a second caller waits, then finds the binary.
exec 9>"$cache/.build.lock"
flock 9 || die "cannot lock $cache/.build.lock"
if works; then
	printf '%s\n' "$bin"
	exit 0
fi

# The caller's Go settings are for refretry's module: none of them reach this build.
# GOENV=off: go reads no go env file, where an empty variable would otherwise fall
# back to the file's value (GOFLAGS='' alone does not clear a GOFLAGS set there).
export GOENV=off GOFLAGS='' GOWORK=off GOTOOLCHAIN=local CGO_ENABLED=1
unset GOOS GOARCH GO111MODULE GOFIPS140 GOEXPERIMENT GOAMD64 GOARM64

command -v go >/dev/null || die "no go on PATH"
command -v gcc >/dev/null || command -v cc >/dev/null || die "no C compiler on PATH (the SQLite driver needs cgo)"

log "building Gitea $version into $cache (about ten minutes on two cores)"
t=$(now)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Outside any module: go mod download of module@version needs no go.mod.
cd "$work"

log "go mod download $module@$version"
json=$(go mod download -json "$module@$version") || die "go mod download $module@$version: $json"
dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
[ -n "$dir" ] && [ -f "$dir/go.mod" ] || die "go mod download $module@$version gave no source directory: $json"

src="$work/src"
mkdir "$src"
cp -r "$dir/." "$src" || die "copying $dir"
chmod -R u+w "$src" || die "making $src writable"

# Without the embedded options and templates, gitea web stops at start-up.
for d in modules/options modules/templates modules/public modules/migration; do
	log "go generate -tags bindata ./$d"
	(cd "$src/$d" && go generate -tags bindata .) >"$work/generate.log" 2>&1 ||
		{ tail -n 40 "$work/generate.log" >&2; die "go generate in $d failed"; }
done

log "go build -tags '$tags'"
# -buildvcs=false: the copy is no checkout, but TMPDIR might lie inside one.
(cd "$src" && go build -buildvcs=false -tags "$tags" \
	-ldflags "-X 'main.Version=${version#v}' -X 'main.Tags=$tags'" \
	-o "$work/gitea" .) >"$work/build.log" 2>&1 ||
	{ tail -n 40 "$work/build.log" >&2; die "go build of Gitea failed"; }

# Into place in one rename, so an interrupted build never looks finished.
mv -f "$work/gitea" "$bin.tmp" && mv -f "$bin.tmp" "$bin" || die "installing $bin"
works || die "the built $bin does not answer --version with ${version#v}: $("$bin" --version 2>&1 | head -n 3)"
log "timing: cold Gitea build: $(since "$t")"
log "installed $("$bin" --version)"
printf '%s\n' "$bin"
