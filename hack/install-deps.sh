#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need. Idempotent, and fast
# when everything is already installed (no apt-get update in that case).
set -euo pipefail
packages=(
  g++ cmake ninja-build make pkg-config ccache
  libcpprest-dev rapidjson-dev libspdlog-dev prometheus-cpp-dev libcli11-dev catch2
  libssl-dev libyaml-cpp-dev libzstd-dev
  openssl curl python3 lua5.1 strace clang libclang-rt-14-dev clang-format-14 clang-tidy-14
)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present" >&2
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
for tool in go kubectl; do
  command -v "$tool" >/dev/null || echo "install-deps: warning: '$tool' is not on PATH; the tests need it" >&2
done
