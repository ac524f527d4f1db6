#!/usr/bin/env bash
# The built-in socket transport against the same links over a net plugin (by default Atoll's own
# TCP net, build/libnccl-net-atoll.so), NCCL_SHM_DISABLE=1 so every link is the one measured,
# interleaved over rounds so the machine's noise hits both alike; prints a markdown table of median
# time and busbw per size, and the plugin's busbw over the built-in's.
#   perf/bench/compare_nets.sh [BUILD_DIR (build)] [NP (2)] [ROUNDS (5)] [PLUGIN]
set -euo pipefail
build=${1:-build} np=${2:-2} rounds=${3:-5}
plugin=${4:-$(realpath "$build/libnccl-net-atoll.so")}
for f in "$build/bin/atollrun" "$build/perf/all_reduce_perf" "$plugin"; do
  [ -e "$f" ] || { echo "$0: $f is missing (build first: tools/build.sh release)" >&2; exit 2; }
done
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for ((r = 0; r < rounds; r++)); do
  for side in builtin plugin; do
    env=(NCCL_SHM_DISABLE=1 NCCL_NET_PLUGIN=none)
    [ "$side" = plugin ] && env=(NCCL_SHM_DISABLE=1 "NCCL_NET_PLUGIN=$plugin")
    env "${env[@]}" "$build/bin/atollrun" -np "$np" "$build/perf/all_reduce_perf" -b 8 -e 64M -f 8 -c 0 -n 20 -w 5 |
      awk -v s="$side" '/^ +[0-9]/ { print s, $1, $6, $8 }'
  done
done > "$out"
python3 - "$out" "$np" <<'PY'
import statistics, sys
t, bw = {}, {}
for line in open(sys.argv[1]):
    side, size, us, busbw = line.split()
    t.setdefault((side, int(size)), []).append(float(us))
    bw.setdefault((side, int(size)), []).append(float(busbw))
sizes = sorted({s for _, s in t})
print(f"all_reduce_perf, np={sys.argv[2]}, out of place, medians of {len(t[('builtin', sizes[0])])} interleaved rounds")
print("| bytes | built-in us | plugin us | built-in busbw GB/s | plugin busbw GB/s | plugin/built-in busbw |")
print("|---:|---:|---:|---:|---:|---:|")
for s in sizes:
    m = lambda d, k: statistics.median(d[(k, s)])
    a, b = m(bw, "builtin"), m(bw, "plugin")
    ratio = f"{b / a:.2f}" if a > 0 else "-"
    print(f"| {s} | {m(t, 'builtin'):.1f} | {m(t, 'plugin'):.1f} | {a:.2f} | {b:.2f} | {ratio} |")
PY
