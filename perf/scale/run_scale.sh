#!/usr/bin/env bash
# The scale benchmark's table (perf/scale/README.md): N ranks as threads of one process, and N
# ranks as processes under atollrun, each doing init, one all-reduce and destroy.
#   perf/scale/run_scale.sh [--build build] [--threads "64 256 1024"] [--procs "64 128"] [--bytes 1048576]
set -euo pipefail
build=build threads="64 256 1024" procs="64 128" bytes=1048576
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --procs) procs=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--threads \"N ...\"] [--procs \"N ...\"] [--bytes B]" >&2; exit 2 ;;
  esac
done
bench=$build/perf/scale_bench
[ -x "$bench" ] || { echo "$bench not built (ninja -C $build scale_bench)" >&2; exit 1; }
"$bench" --threads 1 --bytes 8 | head -1  # the header
for n in $threads; do "$bench" --threads "$n" --bytes "$bytes" --no-header; done
for n in $procs; do
  out=$(mktemp)
  start=$(date +%s.%N)
  "$build/bin/atollrun" -np "$n" "$bench" --procs --bytes "$bytes" >"$out"
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  # Per-rank lines: the job's wall time from here; init/all-reduce/destroy as the slowest rank's;
  # RSS summed over processes; per-rank columns averaged, maxima kept.
  awk -v wall="$wall" -v n="$n" '$1 == "process" {
      init = $4 > init ? $4 : init; ar = $5 > ar ? $5 : ar; de = $6 > de ? $6 : de; rss += $7; fds += $9
      split($10, l, "/"); la += l[1]; lm = l[2] > lm ? l[2] : lm
      split($11, m, "/"); ma += m[1]; mm = m[2] > mm ? m[2] : mm; k++ }
    END { printf "%-8s %6d %8.2f %8.2f %10.1f %8.2f %9.1f %9.2f %8.2f %6.1f/%-4d %7.1f/%-4d\n", "process", n, wall,
          init, ar, de, rss, rss / k, fds / k, la / k, lm, ma / k, mm }' "$out"
  rm -f "$out"
done
