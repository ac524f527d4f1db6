#!/usr/bin/env bash
# usage: smoke_baselines.sh BUILD_DIR
# run_baselines.sh end to end on tiny settings (2 ranks, 8 B .. 64 KiB, 2 iterations) into a
# temporary directory; fails unless every output exists and the targets section is printed. Then
# the size-by-size order on two sizes, two bad option values, and ab_libs.sh.
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
for f in phases.csv rounds.csv ratios.md; do
  [[ -s "$out/res/$f" ]] || { echo "missing or empty: $f" >&2; status=1; }
done
# Every run has its core-to-core round trip before and after (6 systems, one sweep each).
rtts=$(awk -F, 'NR > 1 && $5 > 0 && $6 > 0' "$out/res/phases.csv" | wc -l)
[[ "$rtts" -eq 6 ]] || { echo "phases.csv has $rtts complete runs, expected 6" >&2; status=1; }
grep -q '^## Paired run by run' "$out/res/ratios.md" || { echo "ratios.md has no paired table" >&2; status=1; }
((status == 0)) || cat "$log"

# Size by size: 2 systems x 2 sizes x 2 rounds, each size a run of its own.
slog="$out/size.log"
if ! "$(dirname "$0")/run_baselines.sh" --build "$build" --out "$out/size" --np 2 --min 8 --max 64 --factor 8 \
  --iters 2 --warmup 1 --rounds 2 --interleave size --systems "atoll_shm mpi" --timeout 60 > "$slog" 2>&1; then
  cat "$slog"
  exit 1
fi
runs=$(ls "$out/size/json" | grep -c '_s[0-9]*\.json$' || true)
[[ "$runs" -eq 8 ]] || { echo "size mode wrote $runs JSON files, expected 8" >&2; status=1; }
# 2 systems x 2 sizes x 2 rounds x 2 placements, plus the header; every row has its round trip.
rows=$(awk -F, 'NR > 1 && $10 > 0' "$out/size/rounds.csv" | wc -l)
[[ "$rows" -eq 16 ]] || { echo "size mode rounds.csv has $rows rows with a round trip, expected 16" >&2; status=1; }
grep -q '^| 64 B |' "$out/size/ratios.md" || { echo "size mode ratios.md has no 64 B row" >&2; status=1; }
for bad in "--interleave sizes" "--interleave size --factor 1"; do
  # shellcheck disable=SC2086  # the options are meant to split
  if "$(dirname "$0")/run_baselines.sh" --build "$build" --out "$out/bad" $bad > "$out/bad.log" 2>&1 ||
    ! grep -q 'run_baselines.sh: --' "$out/bad.log"; then
    echo "run_baselines.sh $bad: expected a usage error" >&2
    cat "$out/bad.log" >&2
    status=1
  fi
done

# ab_libs.sh, the build's library against itself: one round, every size in a phase row, and a
# directory without the library refused.
ab="$out/ab.log"
if ! "$(dirname "$0")/ab_libs.sh" --build "$build" --rounds 1 "$build" "$build" -- -b 8 -e 64 -f 8 -n 10 -w 1 -c 1 \
  > "$ab" 2>&1; then
  cat "$ab"
  exit 1
fi
for size in 8 64; do
  grep -Eq "^\| (fast|slow|mixed) \| $size \|" "$ab" || { echo "ab_libs.sh printed no row for $size B" >&2; cat "$ab" >&2; status=1; }
done
if "$(dirname "$0")/ab_libs.sh" --build "$build" "$out" "$build" > "$out/ab_bad.log" 2>&1 ||
  ! grep -q 'no libatoll.so.0 in' "$out/ab_bad.log"; then
  echo "ab_libs.sh: a directory without the library was not refused" >&2
  status=1
fi
exit $status
