#!/usr/bin/env bash
# The test command (README; .ci/run calls exactly this): installs what is missing, builds with
# warnings as errors, runs the whole suite, then the ASan+UBSan and TSan jobs on their subsets, then
# a short libFuzzer run of every target in tests/fuzz (ATOLL_FUZZ_SECONDS each, default 60).
#   tools/run-tests.sh            everything (what CI runs)
#   tools/run-tests.sh release    only the plain build and its full suite
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:-all}
bash tools/install-deps.sh
ncpu=$(nproc)
status=0
failed=()
run_suite() {  # dir, extra ctest arguments (test selection)
  local dir=$1
  shift
  echo "=== ctest $dir $*"
  if ! ctest --test-dir "$dir" --output-on-failure -j"$ncpu" --timeout 600 "$@"; then
    status=1
    # Kept for the summary at the end: CI shows only the tail of this output.
    while read -r line; do failed+=("$dir: $line"); done \
      < <(cat "$dir/Testing/Temporary/LastTestsFailed.log" 2>/dev/null || echo "(ctest failed)")
  fi
}
# What the sanitizer jobs skip: scale tests whose runtime grows 5-20x under instrumentation and
# that exercise no code the smaller cases do not. (Their collective sweeps are --lean, coll.cmake.)
sanitizer_skip='LargeRankCounts|LogDepthLarge|scale_join|Generators/SmallShapes.*_n(9|16)|all_types|_np8|_n8_'
bash tools/build.sh release
run_suite build
if [ "$jobs" = all ]; then
  # Sanitizer jobs: ASan+UBSan on units and integration subsets, TSan on the threaded paths.
  bash tools/build.sh asan
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    run_suite build-asan -E "$sanitizer_skip"
  bash tools/build.sh tsan
  # TSan only: with 8 socket ranks slowed 5-20x, a starved healthy rank can outlast the test's 1 s
  # ATOLL_TIMEOUT_MS and be named instead of the stopped one (seen in CI context, not when run
  # alone); the release and ASan jobs still run it.
  TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tools/tsan.supp run_suite build-tsan -E "$sanitizer_skip|fault_dead_peer_stopped_socket_8"
  echo "=== fuzz"
  bash tools/run-fuzz.sh "${ATOLL_FUZZ_SECONDS:-60}" || { status=1; failed+=("fuzz (see above)"); }
fi
if [ "$status" -ne 0 ]; then
  echo "=== FAILED:"
  printf '  %s\n' "${failed[@]}"
fi
exit $status
