#!/usr/bin/env bash
# get-git.sh: provide git 2.55.0 (built with reftable support) in a cache directory
# outside the repository, and print the path of its git binary on stdout.
#
# Usage: scripts/get-git.sh
#        scripts/get-git.sh --source DIR
#   With --source, it leaves git's source tree in DIR instead, built (with the same
#   flags, not installed) so that git's own test suite can run there, and prints DIR
#   (scripts/git-suite.sh). The build for the cache is itself made in a source tree kept
#   beside the prefix, git-2.55.0-src, which --source with that DIR then finds built.
#
# Idempotent: when the cached build exists and works it does nothing else and prints only
# the path. Loud on failure: any step that fails stops the script with a non-zero exit
# and a message on stderr; it never falls back to another git.
#
# Environment:
#   REFRETRY_GIT_CACHE  install prefix (default ${XDG_CACHE_HOME:-$HOME/.cache}/refretry/git-2.55.0)
set -euo pipefail

source_dir=
case "${1:-}" in
--source)
	if [ $# -ne 2 ] || [ -z "$2" ]; then echo "usage: $0 [--source DIR]" >&2; exit 2; fi
	source_dir=$2
	;;
"") ;;
*) echo "usage: $0 [--source DIR]" >&2; exit 2 ;;
esac

version=2.55.0
debver="1:${version}-1"
prefix="${REFRETRY_GIT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/refretry/git-${version}}"
git="$prefix/bin/git"
# The build's flags. NO_RUST: git 2.55 compiles its optional Rust parts unless told not to,
# and then needs a working cargo, which a plain machine (or a fresh HOME under rustup) lacks.
# The flags are recorded beside the build, so a cached build made with other flags is
# rebuilt rather than mistaken for this one.
flags="NO_GETTEXT=1 NO_TCLTK=1 NO_PERL=1 NO_PYTHON=1 NO_RUST=1"
stamp="$prefix/.refretry-build-flags"

log() { printf 'get-git: %s\n' "$*" >&2; }
die() { printf 'get-git: FAILED: %s\n' "$*" >&2; exit 1; }

works() {
	[ -x "$git" ] || return 1
	[ "$(cat "$stamp" 2>/dev/null)" = "$flags" ] || return 1
	"$git" version 2>/dev/null | grep -qx "git version $version" || return 1
	local tmp
	tmp=$(mktemp -d)
	"$git" init -q --ref-format=reftable "$tmp/r" >/dev/null 2>&1
	local rc=$?
	rm -rf "$tmp"
	return $rc
}

if [ -n "$source_dir" ]; then
	if [ "$(cat "$source_dir/.refretry-build-flags" 2>/dev/null)" = "$flags" ] && [ -x "$source_dir/t/helper/test-tool" ]; then
		printf '%s\n' "$source_dir"
		exit 0
	fi
	[ ! -e "$source_dir" ] || [ -z "$(ls -A "$source_dir")" ] || [ -f "$source_dir/.refretry-source" ] ||
		die "$source_dir exists and is not a source tree this script made"
	log "building git $version's source tree in $source_dir (a few minutes)"
elif works; then
	printf '%s\n' "$git"
	exit 0
else
	log "building git $version into $prefix (about two minutes)"
fi
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# 1. A deb-src line for unstable that reuses the archive URI the system already uses.
src_list=/etc/apt/sources.list.d/refretry-unstable-src.sources
if [ ! -f "$src_list" ]; then
	uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
	[ -n "$uri" ] || die "cannot read the archive URI from /etc/apt/sources.list.d/debian.sources"
	printf 'Types: deb-src\nURIs: %s\nSuites: unstable\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$uri" |
		as_root tee "$src_list" >/dev/null
fi
as_root apt-get update -qq >/dev/null || die "apt-get update failed"

# 2. Build dependencies from the running system.
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	build-essential zlib1g-dev libcurl4-gnutls-dev libexpat1-dev xz-utils dpkg-dev >/dev/null ||
	die "installing build dependencies failed"

# 3. The pristine upstream tarball from the source package.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get source -qq --download-only "git=$debver" >/dev/null 2>&1) ||
	die "apt-get source git=$debver failed"
tarball=$(ls "$work"/git_${version}.orig.tar.* 2>/dev/null | head -n1)
[ -n "$tarball" ] || die "no git_${version}.orig.tar.* in the source package"
tar -C "$work" -xf "$tarball" || die "unpacking $tarball failed"
srcdir=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name 'git-*' | head -n1)
[ -n "$srcdir" ] || die "no source directory in $tarball"

if [ -n "$source_dir" ]; then
	# 4'. Build in place, for git's test suite.
	rm -rf "$source_dir"
	mkdir -p "$(dirname "$source_dir")"
	mv "$srcdir" "$source_dir"
	: >"$source_dir/.refretry-source"
	# shellcheck disable=SC2086 # $flags is a list of make variables
	make -C "$source_dir" -j"$(nproc)" $flags all >"$work/build.log" 2>&1 ||
		{ tail -n 40 "$work/build.log" >&2; die "building git's source tree failed"; }
	printf '%s\n' "$flags" >"$source_dir/.refretry-build-flags"
	printf '%s\n' "$source_dir"
	exit 0
fi

# 4. Build and install into the cache prefix. The build is made in a source tree kept
# beside the prefix (git-<version>-src), where `--source` finds it built: git's own
# test suite (scripts/git-suite.sh) then runs without a second build of the same
# source, which on a fresh 2-core machine took as long again. A directory of that name
# that this script did not make is left alone, and the build is made in a temporary one.
tree="$(dirname "$prefix")/git-${version}-src"
if [ ! -e "$tree" ] || [ -z "$(ls -A "$tree")" ] || [ -f "$tree/.refretry-source" ]; then
	rm -rf "$tree"
	mkdir -p "$(dirname "$tree")"
	mv "$srcdir" "$tree"
	: >"$tree/.refretry-source"
	srcdir=$tree
fi
rm -f "$stamp" "$srcdir/.refretry-build-flags" # an interrupted build must not look finished
mkdir -p "$prefix"
# shellcheck disable=SC2086 # $flags is a list of make variables
make -C "$srcdir" -j"$(nproc)" prefix="$prefix" $flags \
	install >"$work/build.log" 2>&1 || { tail -n 40 "$work/build.log" >&2; die "building git failed"; }
printf '%s\n' "$flags" >"$stamp"
printf '%s\n' "$flags" >"$srcdir/.refretry-build-flags"

# 5. Check.
works || die "the built git at $git does not create reftable repositories"
log "installed $("$git" version)"
printf '%s\n' "$git"
