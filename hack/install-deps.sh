#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need. Idempotent, and fast
# when everything is already installed (no apt-get update in that case).
set -euo pipefail
packages=(
  g++ cmake ninja-build make pkg-config ccache
  libboost-dev rapidjson-dev libspdlog-dev prometheus-cpp-dev libcli11-dev catch2
  libssl-dev libyaml-cpp-dev libzstd-dev libprotobuf-dev protobuf-compiler libcbor-dev
  openssl curl python3 python3-venv lua5.1 strace clang libclang-rt-14-dev clang-format-14 clang-tidy-14
  prometheus redis-server
)
# Debian's prometheus and redis-server packages enable and start a server (:9090, :6379) where
# systemd runs. The tests start their own (on free 127.0.0.1 ports, with temporary data), so the
# packaged services are stopped and disabled: nothing the install starts stays running.
stop_packaged_services() {
  [ -d /run/systemd/system ] || return 0
  local service
  for service in prometheus.service redis-server.service; do
    systemctl is-enabled --quiet "$service" 2>/dev/null ||
      systemctl is-active --quiet "$service" 2>/dev/null || continue
    echo "install-deps: stopping and disabling the packaged $service" >&2
    "${sudo_cmd[@]}" systemctl disable --now "$service"
  done
}
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present" >&2
  stop_packaged_services
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
"${sudo_cmd[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
stop_packaged_services
for tool in go kubectl; do
  command -v "$tool" >/dev/null || echo "install-deps: warning: '$tool' is not on PATH; the tests need it" >&2
done
