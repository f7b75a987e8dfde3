# Sourced by hack/sanitize and hack/sanitize-operator: the ASan + UBSan build folder, configured with
# clang. Clang compiles the ASan + UBSan instrumentation in half GCC's CPU time (a runtime source
# file: 7.2 s with GCC 12, 3.7 s with clang 14); that build was the longest C++ step of `make test`
# on a new machine. TSan stays with GCC (the two compilers are even there), so both see the tree.
#
# configure_asan_build BUILD_DIR: configures BUILD_DIR (Debug, MYOP_SANITIZE=address,undefined) with
# clang++; a folder configured with another compiler (GCC, before 6 December) is started over, since
# CMake does not change the compiler of a configured folder.
configure_asan_build() {
  local build=$1 clang
  clang=$(command -v clang++-14 || command -v clang++ || true)
  if [ -z "$clang" ]; then
    echo "asan-build: clang++ not found (make deps installs clang and libclang-rt-14-dev)" >&2
    return 2
  fi
  if [ -f "$build/CMakeCache.txt" ] && ! grep -qx "CMAKE_CXX_COMPILER:[A-Z]*=$clang" "$build/CMakeCache.txt"; then
    rm -rf "$build"
  fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMYOP_SANITIZE=address,undefined \
    -DCMAKE_CXX_COMPILER="$clang" >/dev/null
}
