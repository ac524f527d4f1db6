#!/usr/bin/env bash
# run_scales.sh [--build DIR] [--out DIR] [--scales "1k 8k 32k 100k"]: atoll-sim's all-reduce
# sweeps at 1k, 8k, 32k and 100k GPUs (8 GPUs and 4 x 400 Gb/s rails per host, 16 hosts per leaf,
# islands of 256 GPUs at 1k and 1024 above, a 4:1 core between islands), each as a table
# (<scale>.txt), a CSV and a PNG of busbw per algorithm with the selector's pick marked; then the
# fat-tree against Dragonfly+ table for 1 GiB at 32k (topologies.txt). perf/sim/README.md has the
# results and the time each part takes.
set -euo pipefail
build=build out=/tmp/atoll-sim scales="1k 8k 32k 100k"
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --scales) scales=$2; shift 2 ;;
    *) echo "usage: run_scales.sh [--build DIR] [--out DIR] [--scales LIST]" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "$0")" && pwd)
sim=$build/bin/atoll-sim
[[ -x $sim ]] || { echo "run_scales.sh: $sim not built (tools/build.sh release)" >&2; exit 1; }
mkdir -p "$out"
common=(--nodes-per-leaf 16 --global-oversub 4 --channels 2)
for scale in $scales; do
  case $scale in
    1k) args=(--nodes 128 --leaves-per-island 2 -b 4K -e 4G -f 4) ;;
    8k) args=(--nodes 1024 --leaves-per-island 8 -b 64K -e 4G -f 8 --max-steps 5000000) ;;
    32k) args=(--nodes 4096 --leaves-per-island 8 -b 1M -e 4G -f 8 --max-steps 5000000) ;;
    # The flat ring is left out at 100k: paced by the latency around the ring at every size up to
    # 4 GiB, it would take 2(n-1)n = 20 billion steps.
    100k) args=(--nodes 12544 --leaves-per-island 8 -b 64M -e 4G -f 64 --algos tree,rhd,hierarchical) ;;
    *) echo "run_scales.sh: unknown scale $scale" >&2; exit 2 ;;
  esac
  echo "== $scale: atoll-sim ${common[*]} ${args[*]}"
  "$sim" "${common[@]}" "${args[@]}" --csv "$out/$scale.csv" 2> "$out/$scale.log" | tee "$out/$scale.txt"
  bash "$here/plot.sh" "$out/$scale.csv" "$out/busbw_$scale.png" \
    "atoll-sim: all-reduce busbw, $(awk -F, 'NR == 2 {print $1}' "$out/$scale.csv") GPUs, islands behind a 4:1 core"
done
# 1 GiB at 32k GPUs: fat-tree cores at 1:1, 2:1, 4:1 against Dragonfly+ groups of 4 islands.
{
  echo "| topology | ring | hierarchical | rhd | pick |"
  echo "|---|---|---|---|---|"
  for topo in "fat-tree 1:1|--global-oversub 1" "fat-tree 2:1|--global-oversub 2" "fat-tree 4:1|--global-oversub 4" \
              "Dragonfly+ 4 islands/group, 2:1 into group, 1:1 global|--islands-per-group 4 --group-oversub 2 --global-oversub 1" \
              "Dragonfly+ 4 islands/group, 2:1 into group, 4:1 global|--islands-per-group 4 --group-oversub 2 --global-oversub 4"; do
    name=${topo%%|*} flags=${topo#*|}
    # shellcheck disable=SC2086
    "$sim" --nodes 4096 --nodes-per-leaf 16 --leaves-per-island 8 --channels 2 $flags -b 1G -e 1G \
      --algos ring,hierarchical,rhd --max-steps 5000000 --csv "$out/topo.csv" > "$out/topo.txt" 2>&1
    row=$(awk -F, 'NR > 1 {v[$4] = sprintf("%.1f GB/s", $8); if ($9 == 1) p = $4}
                   END {printf "%s | %s | %s | %s", (v["ring"] ? v["ring"] : "skipped"), v["hierarchical"], (v["rhd"] ? v["rhd"] : "skipped"), p}' "$out/topo.csv")
    echo "| $name | $row |"
  done
} | tee "$out/topologies.txt"
