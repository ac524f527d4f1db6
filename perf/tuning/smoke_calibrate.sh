#!/usr/bin/env bash
# perf_calibrate_smoke: atoll-calibrate on 2 ranks, 8 B..1 MiB, then the file it wrote must be
# complete and must reach the library through NCCL_CONF_FILE (atoll-info reports source "config").
set -euo pipefail
build=${1:?usage: smoke_calibrate.sh BUILD_DIR}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$build/bin/atoll-calibrate" --np 2 --max 1M --iters 3 --out "$out/atoll.conf" 2> "$out/report.txt" || {
  cat "$out/report.txt"; exit 1; }
cat "$out/atoll.conf"
grep -q '^# shm, 2 ranks' "$out/report.txt" && grep -q '^# socket, 2 ranks' "$out/report.txt" || {
  echo "fit report incomplete:"; cat "$out/report.txt"; exit 1; }
# Captured once: `atoll-info | grep -q` under pipefail fails whenever grep exits before atoll-info
# has written everything (SIGPIPE), which a longer parameter list makes likelier.
NCCL_CONF_FILE="$out/atoll.conf" "$build/bin/atoll-info" --params > "$out/params.txt"
for name in SHM_BW_MBS SHM_LAT_NS STEP_NS TREE_BW_PCT RHD_BW_PCT RD_BW_PCT SOCKET_BW_MBS SOCKET_LAT_NS; do
  value=$(sed -n "s/^ATOLL_MODEL_$name=\([0-9][0-9]*\)$/\1/p" "$out/atoll.conf")
  [[ -n "$value" ]] || { echo "ATOLL_MODEL_$name missing or not a number"; exit 1; }
  [[ "$name" != *BW* || "$value" -gt 0 ]] || { echo "ATOLL_MODEL_$name=$value: no bandwidth"; exit 1; }
  grep -Eq "^ATOLL_MODEL_$name +int +[0-9]+ +$value +config$" "$out/params.txt" || {
      echo "ATOLL_MODEL_$name=$value did not arrive through NCCL_CONF_FILE"; exit 1; }
done
# Bad input is refused with the usage status.
if "$build/bin/atoll-calibrate" --np 1 2>/dev/null; then echo "--np 1 accepted"; exit 1; fi
if "$build/bin/atoll-calibrate" --links ib 2>/dev/null; then echo "--links ib accepted"; exit 1; fi
echo "calibrate smoke: ok"
