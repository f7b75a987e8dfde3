#!/usr/bin/env bash
# Writes an SPDX 2.3 JSON SBOM of my-operator's runtime contents: the binary and every shared
# library `ldd` reports, each library as the Debian package that owns it, with its version.
#
# syft (pinned in hack/tools/syft, built by hack/build-tools.sh) scans a staging folder that
# holds only those files plus the dpkg database entries (status, file lists, copyright) of
# their packages, so the SBOM lists exactly what the binary loads, not the whole machine.
#
# Usage: hack/sbom.sh [BINARY] [OUTPUT]
#   BINARY defaults to build/my-operator, OUTPUT to <BINARY's folder>/sbom/my-operator.spdx.json
# Environment: SYFT=<path> uses that syft instead of the pinned one.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
binary=$(readlink -f "${1:-$repo/build/my-operator}")
output=${2:-$(dirname "$binary")/sbom/my-operator.spdx.json}
[ -x "$binary" ] || { echo "sbom: no executable at $binary (build it first: make build)" >&2; exit 2; }
command -v dpkg-query >/dev/null || { echo "sbom: dpkg-query not found: this script reads Debian's package database" >&2; exit 2; }
syft=${SYFT:-$("$repo/hack/build-tools.sh" --print-bin-dir syft)/syft}

stage=$(mktemp -d "${TMPDIR:-/tmp}/myop-sbom.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/usr/local/bin" "$stage/var/lib/dpkg/info"
# Mirror a merged /usr (/lib -> usr/lib ...) so the staged paths resolve as they do here.
for top in lib lib32 lib64 libx32 bin sbin; do
  if [ -L "/$top" ]; then ln -s "$(readlink "/$top")" "$stage/$top"; mkdir -p "$stage/$(readlink -f "/$top")"; fi
done
cp "$binary" "$stage/usr/local/bin/my-operator"

# The Debian package owning a path, trying the merged-/usr spellings of it too.
owner_of() {
  local path=$1 candidate owner
  for candidate in "$path" "/usr$path" "$(readlink -f "$path")" "/usr$(readlink -f "$path")"; do
    owner=$(dpkg-query -S "$candidate" 2>/dev/null | head -n1) || continue
    [ -n "$owner" ] && { echo "${owner%%: *}"; return 0; }
  done
  return 1
}

# Every library ldd resolves (=> /path), and the dynamic loader (a bare absolute path).
mapfile -t libraries < <(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' | sort -u)
[ "${#libraries[@]}" -gt 0 ] || { echo "sbom: ldd reports no shared libraries for $binary" >&2; exit 1; }

declare -A packages=()
for library in "${libraries[@]}"; do
  package=$(owner_of "$library") || { echo "sbom: no Debian package owns $library" >&2; exit 1; }
  packages[$package]=1
  # The library as ldd names it (often a symlink) and the file it resolves to.
  real=$(readlink -f "$library")
  mkdir -p "$stage$(dirname "$real")" && cp "$real" "$stage$real"
  if [ "$library" != "$real" ] && [ ! -e "$stage$library" ]; then
    mkdir -p "$stage$(dirname "$library")" && cp -P "$library" "$stage$library"
  fi
done

# The distribution (purls pkg:deb/debian/...?distro=debian-12 need it, and so do scanners).
mkdir -p "$stage/etc"
cp -L /etc/os-release "$stage/etc/os-release"

# The dpkg database entries of exactly those packages.
for package in $(printf '%s\n' "${!packages[@]}" | sort); do
  dpkg-query -s "$package" >> "$stage/var/lib/dpkg/status"
  echo >> "$stage/var/lib/dpkg/status"
  for suffix in list md5sums; do
    for info in "/var/lib/dpkg/info/$package.$suffix" "/var/lib/dpkg/info/${package%%:*}.$suffix"; do
      [ -f "$info" ] && { cp "$info" "$stage/var/lib/dpkg/info/"; break; }
    done
  done
  copyright="/usr/share/doc/${package%%:*}/copyright"
  if [ -f "$copyright" ]; then
    mkdir -p "$stage$(dirname "$copyright")" && cp "$copyright" "$stage$copyright"
  fi
done

version=$("$binary" --version 2>/dev/null | grep -Eo '[0-9]+\.[0-9]+\.[0-9]+[^ ]*' | head -n1 || true)
mkdir -p "$(dirname "$output")"
# Files too (SPDX "files" with sha256), so every library is named by path and by package.
SYFT_CHECK_FOR_APP_UPDATE=false \
SYFT_FILE_METADATA_SELECTION=all \
SYFT_FILE_METADATA_DIGESTS=sha256 \
  "$syft" scan "dir:$stage" --quiet \
    --source-name my-operator --source-version "${version:-unknown}" \
    -o "spdx-json=$output"
echo "sbom: wrote $output (${#libraries[@]} libraries from ${#packages[@]} Debian packages)" >&2
