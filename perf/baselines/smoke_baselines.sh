#!/usr/bin/env bash
# usage: smoke_baselines.sh BUILD_DIR
# run_baselines.sh end to end on tiny settings (2 ranks, 8 B .. 64 KiB, 2 iterations) into a
# temporary directory; fails unless every output exists and the targets section is printed.
set -euo pipefail
build=${1:?usage: smoke_baselines.sh BUILD_DIR}
out="$(mktemp -d "${TMPDIR:-/tmp}/atoll-baselines-smoke.XXXXXX")"
trap 'rm -rf "$out"' EXIT
log="$out/run.log"
if ! "$(dirname "$0")/run_baselines.sh" --build "$build" --out "$out/res" --np 2 --min 8 --max 64K --factor 8 \
  --iters 2 --warmup 1 --timeout 60 > "$log" 2>&1; then
  cat "$log"
  exit 1
fi
status=0
for f in table.md results.csv busbw_np2.png targets.txt mpi_config.txt; do
  [[ -s "$out/res/$f" ]] || { echo "missing or empty: $f" >&2; status=1; }
done
# 6 systems x 5 sizes x 2 placements, plus the header.
rows=$(wc -l < "$out/res/results.csv")
[[ "$rows" -eq 61 ]] || { echo "results.csv has $rows lines, expected 61" >&2; status=1; }
grep -q '^## targets' "$log" || { echo "no targets section in the output" >&2; status=1; }
grep -q 'shm busbw / MPI busbw' "$log" || { echo "targets section incomplete" >&2; status=1; }
head -c 8 "$out/res/busbw_np2.png" | od -An -c | grep -q 'P   N   G' || { echo "busbw_np2.png is not a PNG" >&2; status=1; }
((status == 0)) || cat "$log"
exit $status
