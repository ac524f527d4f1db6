#!/usr/bin/env bash
# Checks that the host float-sum kernel runs near memory bandwidth: prints
#   ratio = (float sum bytes/s) / (single-core memcpy bytes/s)
# on 64 MiB operands (out of cache) and exits 1 if the ratio is below the threshold (default 0.80).
#
# Byte accounting (same as bench_kernels): reduce counts 3 streams per element (read a, read b,
# write dst), memcpy counts 2 (read src, write dst). Neither counts write-allocate reads, so a
# ratio of 1.0 means the reduce moves its counted bytes as fast as memcpy moves its own.
# Each benchmark runs several repetitions and the best is kept, since a shared machine only ever
# makes a run slower. CPU time is used (Google Benchmark's default) so descheduled time is ignored.
#
# Usage: check_reduce_bandwidth.sh [path/to/bench_kernels] [threshold]
#   (or `cmake --build build --target check_reduce_bandwidth`, perf/bench/kernels.cmake)
# Exit status: 0 fast enough, 1 too slow, 2 usage error or unparsable benchmark output.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bench="${1:-}"
if [[ -z "$bench" ]]; then
  for candidate in "$here"/../../build*/perf/bench_kernels; do
    [[ -x "$candidate" ]] && { bench="$candidate"; break; }
  done
fi
threshold="${2:-0.80}"
reps="${ATOLL_BENCH_REPS:-5}"
(($# <= 2)) || { echo "usage: check_reduce_bandwidth.sh [path/to/bench_kernels] [threshold]" >&2; exit 2; }
[[ -x "$bench" ]] || { echo "bench_kernels not found at $bench (pass its path)" >&2; exit 2; }
[[ "$threshold" =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "threshold must be a ratio such as 0.80, got '$threshold'" >&2; exit 2; }
[[ "$reps" =~ ^[1-9][0-9]*$ ]] || { echo "ATOLL_BENCH_REPS must be a positive integer, got '$reps'" >&2; exit 2; }

size=67108864
# avx2:1 asks for the best variant the CPU has (it is clamped to baseline without AVX2).
out="$("$bench" --benchmark_filter="^(reduce/sum/float/bytes:$size/avx2:1|memcpy/bytes:$size/ahead:0)\$" \
  --benchmark_repetitions="$reps" --benchmark_min_time=0.2 --benchmark_format=csv 2>/dev/null)"

best() {  # best bytes_per_second among the per-repetition rows of benchmark $1
  awk -F, -v want="\"$1\"" '$1 == want && $6 != "" { if ($6 > m) m = $6 } END { printf "%.0f", m }' <<<"$out"
}
reduce_bw="$(best "reduce/sum/float/bytes:$size/avx2:1")"
memcpy_bw="$(best "memcpy/bytes:$size/ahead:0")"
if [[ -z "$reduce_bw" || "$reduce_bw" == 0 || -z "$memcpy_bw" || "$memcpy_bw" == 0 ]]; then
  echo "could not parse benchmark output:" >&2
  echo "$out" >&2
  exit 2
fi
awk -v r="$reduce_bw" -v m="$memcpy_bw" -v t="$threshold" 'BEGIN {
  ratio = r / m
  printf "float sum (3 streams): %.2f GB/s\n", r / 1e9
  printf "memcpy    (2 streams): %.2f GB/s\n", m / 1e9
  printf "ratio: %.3f (threshold %.2f) %s\n", ratio, t, (ratio >= t) ? "OK" : "TOO SLOW"
  exit (ratio >= t) ? 0 : 1
}'
