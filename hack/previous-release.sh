#!/usr/bin/env bash
# Builds the previous release's operator (hack/tools/previous-release.env) from the repository's own
# history into .cache/previous-release/<commit>/my-operator, for the upgrade test: the Deployments of
# that test are first written by the operator users ran before the upgrade, not by this one.
#
# Only the my-operator target is built (no tests), optimised, without debug information; the source
# comes from `git archive`, so the work tree is untouched. Built once per pinned commit: a second run
# finds the binary and builds nothing. Progress goes to stderr.
#
# Usage: hack/previous-release.sh                  build it if it is missing
#        hack/previous-release.sh --print-binary   the same, then print the binary's path
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
source "$repo/hack/tools/previous-release.env"
commit=$PREVIOUS_RELEASE_COMMIT
dir=$repo/.cache/previous-release/$commit
binary=$dir/my-operator

log() { echo "previous-release: $*" >&2; }
die() { log "$*"; exit 1; }

case "${1:-}" in
  ""|--print-binary) ;;
  *) die "unknown argument '$1' (usage: hack/previous-release.sh [--print-binary])" ;;
esac

if [ ! -x "$binary" ]; then
  git -C "$repo" cat-file -e "$commit^{commit}" 2>/dev/null ||
    die "commit $commit (release $PREVIOUS_RELEASE_VERSION) is not in this clone's history" \
      "(a shallow clone?); fetch it (git fetch --unshallow) and run again"
  mkdir -p "$dir"
  work=$(mktemp -d "$dir/build.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  log "building my-operator $PREVIOUS_RELEASE_VERSION from $commit"
  started=$SECONDS
  mkdir "$work/src"
  git -C "$repo" archive "$commit" | tar -x -C "$work/src"
  # The source folder is new each time: ccache matches its files relative to it.
  # -O1: the binary serves one helm upgrade test, and runs beside the lanes on the same two cores;
  # -O1 compiles faster than -O2.
  CCACHE_BASEDIR="$work/src" cmake -S "$work/src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DBUILD_TESTING=OFF >"$work/configure.log" 2>&1 ||
    { cat "$work/configure.log" >&2; die "configuring $commit failed"; }
  CCACHE_BASEDIR="$work/src" cmake --build "$work/build" --target my-operator -j "$(nproc)" >"$work/build.log" 2>&1 ||
    { tail -50 "$work/build.log" >&2; die "building $commit failed"; }
  "$work/build/my-operator" --version >/dev/null ||
    die "the my-operator built from $commit does not run"
  mv "$work/build/my-operator" "$binary"
  log "built $binary in $((SECONDS - started)) s"
fi
[ "${1:-}" != --print-binary ] || echo "$binary"
