#!/usr/bin/env bash
# plot.sh CSV PNG [TITLE]: busbw against size per algorithm from an atoll-sim --csv file, with the
# selector's pick at each size marked. Needs gnuplot (tools/install-deps.sh installs it).
set -euo pipefail
(($# >= 2)) || { echo "usage: plot.sh CSV PNG [TITLE]" >&2; exit 2; }
csv=$1 png=$2 title=${3:-$(basename "$csv" .csv)}
[[ -s $csv ]] || { echo "plot.sh: $csv is empty or missing" >&2; exit 1; }
command -v gnuplot > /dev/null || { echo "plot.sh: missing gnuplot (apt-get install gnuplot-nox)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Columns: gpus,topology,coll,algo,bytes,time_us,algbw_gbs,busbw_gbs,picked,...
awk -F, -v dir="$tmp" 'NR > 1 {
  print $5, $8 > (dir "/" $4 ".dat")
  if ($9 == 1) print $5, $8 > (dir "/picked.dat")
}' "$csv"
plot=""
for dat in "$tmp"/*.dat; do
  name=$(basename "$dat" .dat)
  [[ $name == picked ]] && continue
  plot+="${plot:+, }'$dat' using 1:2 with linespoints lw 2 title '$name'"
done
[[ -s $tmp/picked.dat ]] && plot+=", '$tmp/picked.dat' using 1:2 with points pt 6 ps 2.5 lc rgb 'black' title 'selector pick'"
terminal="pngcairo noenhanced size 1000,600"
gnuplot -e "set terminal pngcairo" > /dev/null 2>&1 || terminal="png noenhanced size 1000,600"
gnuplot << GNUPLOT
set terminal $terminal
set output '$png'
set title "$title"
set logscale x 2
set format x "%.0b%B"
set xlabel "message size (bytes)"
set ylabel "simulated busbw (GB/s)"
set key top left
set grid
plot $plot
GNUPLOT
echo "wrote $png"
