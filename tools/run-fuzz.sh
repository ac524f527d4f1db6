#!/usr/bin/env bash
# Short libFuzzer runs of every target in tests/fuzz (the CI job; tests/fuzz/README.md):
#   tools/run-fuzz.sh [SECONDS per target, default 60]
# Builds build-fuzz/ with Clang (ATOLL_SANITIZE=fuzzer: ASan+UBSan+coverage), runs each target on a
# scratch copy of its corpus (the repository's corpus is never written), fails on any crash, leak,
# UBSan report or timeout, and leaves the reproducer under build-fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DATOLL_SANITIZE=fuzzer -DATOLL_WERROR=ON \
  -DATOLL_BUILD_BENCH=OFF -DATOLL_WITH_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
ninja -C build-fuzz -j"$(nproc)" fuzz
mkdir -p build-fuzz/crashes
status=0
for target in fuzz_wire fuzz_topology fuzz_params; do
  work=$(mktemp -d)
  cp -r "tests/fuzz/corpus/$target/." "$work/"
  echo "=== $target: ${seconds}s"
  if UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
     "build-fuzz/tests/$target" "$work" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
       -artifact_prefix="build-fuzz/crashes/$target-" -print_final_stats=1 > "build-fuzz/$target.log" 2>&1; then
    grep -E "stat::number_of_executed_units|stat::new_units_added" "build-fuzz/$target.log" | tr '\n' ' '
    echo
  else
    echo "$target FAILED:"; tail -40 "build-fuzz/$target.log"; status=1
  fi
  rm -rf "$work"
done
exit $status
