#!/bin/bash
# pick_sweep.sh: how far the selector's pick is from atoll-sim's simulated best, over a set of
# clusters, as a markdown table (sizes 4 KiB-256 MiB; a miss is a size where the pick is over 1.10x
# the best). With --before BIN, a second atoll-sim (an earlier build's) runs beside it, so a cost
# model change shows its effect cluster by cluster. With --model ALGO, it prints instead the cost
# model's estimate of ALGO over its simulated time, per cluster, at 64 KiB-16 MiB (-f 4).
#   perf/sim/pick_sweep.sh [--sim build/bin/atoll-sim] [--before OLD_BINARY] [--model ALGO]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
sim="$here/../../build/bin/atoll-sim" before="" model=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --sim) sim="$2"; shift 2 ;;
    --before) before="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    -h|--help) sed -n 2,8p "$0"; exit 0 ;;
    *) echo "pick_sweep.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x "$sim" ]] || { echo "pick_sweep.sh: no atoll-sim at $sim (build it first)" >&2; exit 2; }
clusters=(
  "16 hosts, 4 per island, 4:1 core|--nodes 16 --nodes-per-leaf 4 --leaves-per-island 1 --global-oversub 4"
  "16 hosts x 1 GPU, 4 per island, 4:1 core|--nodes 16 --gpus 1 --nics 1 --nodes-per-leaf 4 --leaves-per-island 1 --global-oversub 4"
  "32 hosts x 4 GPUs, 8 per island, 2:1 core|--nodes 32 --gpus 4 --nics 1 --nodes-per-leaf 8 --leaves-per-island 1 --global-oversub 2"
  "validate.sh's cluster (4 hosts x 2, 2 per island, 2:1 core, 1 Gbit/s)|--nodes 4 --gpus 2 --nics 1 --nic-gbps 0.956 --nodes-per-leaf 2 --leaves-per-island 1 --global-oversub 2 --intra-gbs 4 --channels 2"
  "32 hosts, 2 leaves of 4 per island, 4:1 core|--nodes 32 --nodes-per-leaf 4 --leaves-per-island 2 --global-oversub 4"
  "64 hosts Dragonfly+ (2 islands per group)|--nodes 64 --nodes-per-leaf 4 --leaves-per-island 2 --islands-per-group 2 --group-oversub 2 --global-oversub 4"
  "16 hosts, one leaf|--nodes 16 --nodes-per-leaf 16 --leaves-per-island 1"
  "64 hosts, 8 per island, 4:1 core|--nodes 64 --nodes-per-leaf 8 --leaves-per-island 1 --global-oversub 4"
  "128 hosts, 16 per island, 4:1 core|--nodes 128 --nodes-per-leaf 16 --leaves-per-island 1 --global-oversub 4"
  "64 hosts, 16 per island, 4:1 core, 2 channels|--nodes 64 --nodes-per-leaf 16 --leaves-per-island 1 --global-oversub 4 --channels 2"
  "16 hosts, 4 per island, 2:1 core|--nodes 16 --nodes-per-leaf 4 --leaves-per-island 1 --global-oversub 2"
  "16 hosts, 4 per island, 1:1 core|--nodes 16 --nodes-per-leaf 4 --leaves-per-island 1 --global-oversub 1"
  "4 hosts x 8 GPUs without NVSwitch, 2 per island, 2:1 core|--nodes 4 --gpus 8 --no-nvswitch --nodes-per-leaf 2 --leaves-per-island 1 --global-oversub 2"
)
# Misses and the worst pick/best ratio from atoll-sim's table (its last column).
score() {
  "$1" $2 -b 4K -e 256M -f 4 2>&1 |
    awk '/^ +[0-9]/ { r = $NF; if (r > w) w = r; if (r > 1.10) m++ } END { printf "%d, %.3f", m, w }'
}
# The model's estimate of $model over the simulated time, per size (--explain prints both).
ratios() {
  "$sim" $1 --algos "$model" -b 64K -e 16M -f 4 --explain 2>&1 |
    awk -v a="$model" '/^ +[0-9]+ +[0-9]/ { sim = $4 } $0 ~ "^# +" a " +[0-9]" { printf " %.2f |", $3 / sim }'
}
if [[ -n "$model" ]]; then
  echo "| cluster | $model: 64K | 256K | 1M | 4M | 16M |"
  echo "|---|---:|---:|---:|---:|---:|"
  for c in "${clusters[@]}"; do echo "| ${c%%|*} |$(ratios "${c#*|}")"; done
  exit 0
fi
if [[ -n "$before" ]]; then
  echo "| cluster | before: misses, worst | after |"
  echo "|---|---:|---:|"
else
  echo "| cluster | misses, worst |"
  echo "|---|---:|"
fi
for c in "${clusters[@]}"; do
  name="${c%%|*}" flags="${c#*|}"
  if [[ -n "$before" ]]; then
    echo "| $name | $(score "$before" "$flags") | $(score "$sim" "$flags") |"
  else
    echo "| $name | $(score "$sim" "$flags") |"
  fi
done
