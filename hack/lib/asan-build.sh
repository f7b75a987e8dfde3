# Sourced by hack/sanitize, hack/sanitize-operator and hack/fuzz.sh: the clang of the ASan + UBSan
# builds. Clang compiles the ASan + UBSan instrumentation in about half GCC's CPU time (a runtime
# source file: 7.2 s with GCC 12, 3.7 s with clang 14; the unit_tests build: 0.7 ks against about
# 1 ks); that build was the longest C++ step of `make test` on a new machine. TSan stays with GCC
# (the two compilers are even there), so both see the tree.

# find_clang: prints the clang++ whose sanitizer runtimes `make deps` installs (clang++-14, else
# clang++), or says what to install and fails.
find_clang() {
  local clang
  clang=$(command -v clang++-14 || command -v clang++ || true)
  if [ -z "$clang" ]; then
    echo "clang++ not found (make deps installs clang and libclang-rt-14-dev)" >&2
    return 2
  fi
  echo "$clang"
}

# configure_asan_build BUILD_DIR: configures BUILD_DIR (Debug, MYOP_SANITIZE=address,undefined) with
# find_clang's clang++; a folder configured with another compiler (GCC, before 6 December) is started
# over, since CMake does not change the compiler of a configured folder.
configure_asan_build() {
  local build=$1 clang
  clang=$(find_clang) || return
  if [ -f "$build/CMakeCache.txt" ] && ! grep -qx "CMAKE_CXX_COMPILER:[A-Z]*=$clang" "$build/CMakeCache.txt"; then
    rm -rf "$build"
  fi
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMYOP_SANITIZE=address,undefined \
    -DCMAKE_CXX_COMPILER="$clang" >/dev/null
}
