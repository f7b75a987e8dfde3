#!/usr/bin/env bash
# Builds the libFuzzer targets of test/fuzz/ with clang (ASan + UBSan) in build-fuzz/ and runs each for a
# bounded time, starting from the seed corpus in test/fuzz/corpus/<target>/.
#
#   hack/fuzz.sh                 every target, 60 s each
#   FUZZ_SECONDS=300 hack/fuzz.sh watch_parser_fuzzer
#
# New interesting inputs go to build-fuzz/corpus/<target>/ (the seeds in the tree stay small and
# reviewed). A crash leaves its input in build-fuzz/artifacts/ and fails the script; reproduce it with
#   build-fuzz/<target> build-fuzz/artifacts/<file>
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
build=${FUZZ_BUILD_DIR:-$repo/build-fuzz}
seconds=${FUZZ_SECONDS:-60}
jobs=${FUZZ_BUILD_JOBS:-2}
source "$repo/hack/lib/asan-build.sh"
compiler=${FUZZ_CXX:-$(find_clang)}

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(watch_parser_fuzzer kubeconfig_fuzzer conversion_review_fuzzer json_parser_fuzzer)

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$repo/test/fuzz" -B "$build" "${generator[@]}" -DCMAKE_CXX_COMPILER="$compiler" >/dev/null
cmake --build "$build" -j "$jobs" --target "${targets[@]}"

mkdir -p "$build/artifacts"
failed=()
for target in "${targets[@]}"; do
  seeds=$repo/test/fuzz/corpus/${target%_fuzzer}
  corpus=$build/corpus/${target%_fuzzer}
  dictionary=$repo/test/fuzz/${target%_fuzzer}.dict
  mkdir -p "$corpus"
  options=(-max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
           -artifact_prefix="$build/artifacts/$target-")
  [ -f "$dictionary" ] && options+=(-dict="$dictionary")
  echo "fuzz: $target for ${seconds}s (seeds $seeds)"
  if "$build/$target" "${options[@]}" "$corpus" "$seeds" 2>"$build/$target.log"; then
    grep -E '^stat::number_of_executed_units|^stat::new_units_added|^stat::peak_rss_mb' "$build/$target.log" |
      sed "s/^/fuzz: $target /"
    echo "fuzz: $target found no crash"
  else
    tail -n 60 "$build/$target.log" >&2
    echo "fuzz: $target FAILED; log $build/$target.log, inputs in $build/artifacts/" >&2
    failed+=("$target")
  fi
done
[ ${#failed[@]} -eq 0 ] || { echo "fuzz: failures in ${failed[*]}" >&2; exit 1; }
