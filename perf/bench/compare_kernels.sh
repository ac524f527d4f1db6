#!/usr/bin/env bash
# Two bench_kernels builds side by side (e.g. before and after a kernel change), interleaved over
# rounds so the machine's noise hits both alike; prints a markdown table of median bytes/s.
#   perf/bench/compare_kernels.sh OLD_BENCH NEW_BENCH [REGEX] [ROUNDS]
set -euo pipefail
if [ $# -lt 2 ] || [ ! -x "$1" ] || [ ! -x "$2" ]; then
  echo "usage: $0 OLD_BENCH_KERNELS NEW_BENCH_KERNELS [benchmark regex] [rounds (3)]" >&2
  exit 2
fi
old=$1 new=$2 filter=${3:-.} rounds=${4:-3}
csv=$(mktemp)
trap 'rm -f "$csv"' EXIT
for ((r = 0; r < rounds; r++)); do
  for side in old new; do
    bin=$old; [ "$side" = new ] && bin=$new
    "$bin" --benchmark_filter="$filter" --benchmark_min_time=0.1 --benchmark_format=csv 2>/dev/null |
      grep '^"' | sed "s/^/$side,/"
  done
done > "$csv"
python3 - "$csv" <<'PY'
import csv, statistics, sys
runs = {}
for row in csv.reader(open(sys.argv[1])):
    side, name, rate = row[0], row[1], row[6]
    if rate:
        runs.setdefault(name, {"old": [], "new": []})[side].append(float(rate) / 1e9)
print("| benchmark | before GB/s | after GB/s | after/before |")
print("|---|---:|---:|---:|")
for name, r in runs.items():
    if r["old"] and r["new"]:
        o, n = statistics.median(r["old"]), statistics.median(r["new"])
        print(f"| {name} | {o:.2f} | {n:.2f} | {n / o:.1f}x |")
PY
