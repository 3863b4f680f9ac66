#!/usr/bin/env bash
# action-install.sh: put a refretry binary in a directory, for the GitHub Action
# (action.yml) and the GitLab component (templates/refretry.yml, which carries a copy
# of this file that scripts/release-check.sh holds to it). It prints the binary's path
# on its last line of stdout; everything else goes to stderr.
#
# With the argument --plan it only prints the version it would install (vX.Y.Z, latest
# or source), so that the Action can restore Go's build cache before a source build.
#
# A release's archive for this OS and architecture is downloaded and checked against
# the release's checksums.txt before anything in it runs: a checksum that differs, or
# no line for the archive, or no checksums.txt, is an error (fail closed). Where the
# release has no archive for this platform (the download answers 404), or with
# version "source", refretry is built from source instead: from REFRETRY_SOURCE_DIR
# (the Action's own checkout) if set, else with `go install` of the module.
#
# Settings, all from the environment:
#   REFRETRY_VERSION       vX.Y.Z, latest, source, or empty: the release matching
#                          REFRETRY_OWN_REF (the Action's ref) if that is a tag
#                          vX.Y.Z, else source
#   REFRETRY_OWN_REF       the Action's ref (v1.2.3, v1, main, a commit); default
#                          GITHUB_ACTION_REF, else the last part of GITHUB_ACTION_PATH
#                          when that is the runner's .../_actions/<owner>/<repo>/<ref>
#                          (in composite actions GitHub leaves GITHUB_ACTION_REF and
#                          github.action_ref empty: actions/runner#2473)
#   REFRETRY_REPOSITORY    owner/name whose releases to use; default
#                          GITHUB_ACTION_REPOSITORY, else from GITHUB_ACTION_PATH as
#                          above, else refretry/refretry
#   REFRETRY_RELEASES_URL  releases base URL: <base>/download/<tag>/<file> and
#                          <base>/latest/download/<file>; default
#                          ${GITHUB_SERVER_URL:-https://github.com}/<repository>/releases
#   REFRETRY_INSTALL_DIR   where the binary goes (created; not read with --plan)
#   REFRETRY_SOURCE_DIR    source to build when there is no archive (optional)
#   REFRETRY_OS, REFRETRY_ARCH  the platform, as Go names it (default: this machine's)
set -euo pipefail

say() { printf 'refretry install: %s\n' "$*" >&2; }
die() {
	# An annotation on GitHub, a plain line elsewhere (GitLab shows it as it is).
	if [ -n "${GITHUB_ACTIONS:-}" ]; then
		printf '::error title=refretry install::%s\n' "$*" >&2
	else
		printf 'refretry install: error: %s\n' "$*" >&2
	fi
	exit 1
}

version=${REFRETRY_VERSION:-}
own_ref=${REFRETRY_OWN_REF:-${GITHUB_ACTION_REF:-}}
repo=${REFRETRY_REPOSITORY:-${GITHUB_ACTION_REPOSITORY:-}}
action_path=${GITHUB_ACTION_PATH:-}
action_path=${action_path%/}
if [[ $action_path =~ /_actions/([^/]+)/([^/]+)/([^/]+)$ ]]; then
	own_ref=${own_ref:-${BASH_REMATCH[3]}}
	repo=${repo:-${BASH_REMATCH[1]}/${BASH_REMATCH[2]}}
fi
repo=${repo:-refretry/refretry}
base=${REFRETRY_RELEASES_URL:-${GITHUB_SERVER_URL:-https://github.com}/$repo/releases}
base=${base%/}
module=github.com/refretry/refretry
tag_re='^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$'

if [ -z "$version" ]; then
	if [[ $own_ref =~ $tag_re ]]; then
		version=$own_ref
	else
		say "the Action's ref (${own_ref:-unknown}) is not a release tag vX.Y.Z: building from source"
		version=source
	fi
fi
if [ "$version" != source ] && [ "$version" != latest ] && ! [[ $version =~ $tag_re ]]; then
	die "version must be vX.Y.Z, latest or source, not '$version'"
fi
if [ "${1:-}" = --plan ]; then
	printf '%s\n' "$version"
	exit 0
fi
dir=${REFRETRY_INSTALL_DIR:?REFRETRY_INSTALL_DIR is not set}

goos=${REFRETRY_OS:-}
goarch=${REFRETRY_ARCH:-}
if [ -z "$goos" ]; then
	case "$(uname -s)" in
	Linux) goos=linux ;;
	Darwin) goos=darwin ;;
	MINGW* | MSYS* | CYGWIN* | Windows_NT) goos=windows ;;
	*) goos=unknown ;;
	esac
fi
if [ -z "$goarch" ]; then
	case "$(uname -m)" in
	x86_64 | amd64) goarch=amd64 ;;
	aarch64 | arm64) goarch=arm64 ;;
	*) goarch=unknown ;;
	esac
fi
exe="" ext=tar.gz
if [ "$goos" = windows ]; then exe=.exe ext=zip; fi
mkdir -p "$dir"
bin="$dir/refretry$exe"

# build_from_source builds refretry into $bin with the Go on PATH.
build_from_source() {
	command -v go >/dev/null ||
		die "no release archive to use and no Go to build refretry with: add a Go toolchain (actions/setup-go, a golang image) or use a release that has an archive for $goos/$goarch"
	# CGO_ENABLED=0: a static binary, which starts faster (README). GOTOOLCHAIN=local:
	# build with this Go, never download another toolchain.
	if [ -n "${REFRETRY_SOURCE_DIR:-}" ]; then
		local ldflags=""
		if [[ $version =~ $tag_re ]] && [ "$version" = "$own_ref" ]; then
			ldflags="-X $module/internal/buildinfo.version=$version"
		elif [ "$version" != source ]; then
			say "warning: building the Action's own source (ref ${own_ref:-unknown}), not $version"
		fi
		(cd "$REFRETRY_SOURCE_DIR" && CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -ldflags="$ldflags" -o "$bin" .) ||
			die "go build of $REFRETRY_SOURCE_DIR failed"
	else
		local at=$version
		if [ "$at" = source ]; then at=latest; fi
		GOBIN=$dir CGO_ENABLED=0 GOTOOLCHAIN=local go install -trimpath "$module@$at" ||
			die "go install $module@$at failed"
	fi
	say "built $bin from source ($(go env GOVERSION), build cache $(go env GOCACHE))"
}

# fetch URL FILE: 0 when downloaded, 4 when the server answers 404, 1 otherwise.
fetch() {
	local code
	code=$(curl -sS -L --retry 3 --retry-connrefused -o "$2" -w '%{http_code}' -- "$1") || {
		say "could not download $1"
		return 1
	}
	case "$code" in
	200) return 0 ;;
	404) return 4 ;;
	*)
		say "$1: HTTP $code"
		return 1
		;;
	esac
}

sha256() {
	if command -v sha256sum >/dev/null; then
		sha256sum -- "$1" | cut -d' ' -f1
	else
		shasum -a 256 -- "$1" | cut -d' ' -f1
	fi
}

if [ "$version" = source ]; then
	build_from_source
	printf '%s\n' "$bin"
	exit 0
fi
command -v curl >/dev/null || die "curl is needed to download a release"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "$version" = latest ]; then
	url=$base/latest/download
	# The archive's name holds the version: take it from the newest release's
	# checksums.txt, which lists every archive.
	rc=0
	fetch "$url/checksums.txt" "$tmp/checksums.txt" || rc=$?
	if [ "$rc" != 0 ]; then
		die "no checksums.txt in the latest release ($url/checksums.txt): cannot tell which version it is"
	fi
	asset=$(awk -v suffix="_${goos}_${goarch}.$ext" '
		{ name = $2; sub(/^\*/, "", name) }
		name ~ /^refretry_/ && substr(name, length(name) - length(suffix) + 1) == suffix { print name; exit }
	' "$tmp/checksums.txt")
	if [ -z "$asset" ]; then
		say "the latest release has no archive for $goos/$goarch: building from source"
		build_from_source
		printf '%s\n' "$bin"
		exit 0
	fi
else
	url=$base/download/$version
	asset=refretry_${version#v}_${goos}_${goarch}.$ext
fi

rc=0
fetch "$url/$asset" "$tmp/$asset" || rc=$?
case "$rc" in
0) ;;
4)
	say "release $version has no $asset (404): building from source"
	build_from_source
	printf '%s\n' "$bin"
	exit 0
	;;
*) die "downloading $url/$asset failed" ;;
esac
if [ "$version" != latest ]; then
	rc=0
	fetch "$url/checksums.txt" "$tmp/checksums.txt" || rc=$?
	[ "$rc" = 0 ] || die "release $version has $asset but no checksums.txt to check it against: not using it"
fi
# goreleaser writes "<sha256>  <name>"; sha256sum's binary mode puts a * before the name.
want=$(awk -v name="$asset" '$2 == name || $2 == "*" name { print $1; exit }' "$tmp/checksums.txt")
[ -n "$want" ] || die "checksums.txt of release $version has no line for $asset: not using it"
got=$(sha256 "$tmp/$asset")
[ "$got" = "$want" ] || die "SHA-256 of $asset is $got, but checksums.txt says $want: not using it"

mkdir -p "$tmp/x"
if [ "$ext" = zip ]; then
	if command -v unzip >/dev/null; then unzip -q "$tmp/$asset" -d "$tmp/x"; else tar -xf "$tmp/$asset" -C "$tmp/x"; fi
else
	tar -xzf "$tmp/$asset" -C "$tmp/x"
fi
[ -f "$tmp/x/refretry$exe" ] || die "$asset has no refretry$exe at its top"
rm -f "$bin"
mv "$tmp/x/refretry$exe" "$bin"
chmod +x "$bin"
say "installed $asset from $url (SHA-256 $got, as checksums.txt says)"
printf '%s\n' "$bin"
