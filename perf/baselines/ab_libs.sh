#!/usr/bin/env bash
# Two builds of libatoll side by side: all_reduce_perf under atollrun, run after run, alternating
# between the libraries, with the core-to-core round trip (core_rtt) measured before and after
# every run. On a VM the round trip, and with it every shared-memory time, moves 2-5x from one
# second to the next (the host's placement of the virtual CPUs); the medians are therefore taken
# per phase: "fast" runs began and ended under --fast-ns, "slow" ones above 2x that, the rest are
# "mixed" and only counted.
#
# usage: ab_libs.sh [--rounds 20] [--np 2] [--build DIR] [--fast-ns 150] DIR_A DIR_B [-- PERF_ARGS...]
#   DIR_A, DIR_B  directories that each hold a libatoll.so.0 (copy build/libatoll.so.0* there before
#                 and after a change); LD_LIBRARY_PATH puts them ahead of the tools' own RUNPATH
#   PERF_ARGS     all_reduce_perf options (default: -b 8 -e 512 -f 2 -n 20000 -w 200 -c 1)
# Prints, per phase and size, the median in-place time of each library, B over A and the run counts.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../../build"
rounds=20
np=2
fast=150
die() {
  echo "ab_libs.sh: $*" >&2
  exit 2
}
while (($#)); do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --np) np="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --fast-ns) fast="$2"; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) break ;;
    -*) die "unknown option $1" ;;
    *) break ;;
  esac
done
(($# >= 2)) || die "two library directories are needed (--help)"
libs=("$1" "$2")
shift 2
if (($#)); then
  [[ "$1" == -- ]] || die "expected -- before the all_reduce_perf options, not '$1'"
  shift
fi
perf_args=("$@")
((${#perf_args[@]})) || perf_args=(-b 8 -e 512 -f 2 -n 20000 -w 200 -c 1)
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds: '$rounds' is not a positive count"
[[ "$np" =~ ^[1-9][0-9]*$ ]] || die "--np: '$np' is not a rank count"
[[ "$fast" =~ ^[1-9][0-9]*$ ]] || die "--fast-ns: '$fast' is not a positive number of ns"
for lib in "${libs[@]}"; do
  [[ -e "$lib/libatoll.so.0" ]] || die "no libatoll.so.0 in '$lib'"
done
for tool in bin/atollrun perf/all_reduce_perf perf/core_rtt; do
  [[ -x "$build/$tool" ]] || die "missing $build/$tool (ninja -C $build baselines)"
done

rtt() { "$build/perf/core_rtt" | awk '$1 == "core_rtt_ns" { print $2 }'; }
samples="$(mktemp)"
trap 'rm -f "$samples"' EXIT
for ((round = 1; round <= rounds; round++)); do
  for which in 0 1; do
    before=$(rtt)
    out=$(LD_LIBRARY_PATH="$(cd "${libs[$which]}" && pwd)" timeout --kill-after=10 600 \
      "$build/bin/atollrun" -np "$np" "$build/perf/all_reduce_perf" "${perf_args[@]}" 2>&1) ||
      { echo "$out" | tail -n 20 >&2; die "library ${libs[$which]}: all_reduce_perf failed"; }
    after=$(rtt)
    # In-place time: the 10th column of all_reduce_perf's table.
    echo "$out" | awk -v l="$which" -v a="$before" -v b="$after" '/^ +[0-9]/ { print l, a, b, $1, $10 }' >> "$samples"
  done
done

python3 - "$samples" "$fast" "${libs[0]}" "${libs[1]}" << 'EOF'
import statistics, sys
path, fast, name_a, name_b = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
runs = {}
for line in open(path):
    lib, a, b, size, t = line.split()
    slow = min(float(a), float(b))
    phase = "fast" if max(float(a), float(b)) < fast else ("slow" if slow > 2 * fast else "mixed")
    runs.setdefault((phase, int(size), int(lib)), []).append(float(t))
print("A = %s, B = %s; in-place time (us), medians per phase [runs]" % (name_a, name_b))
print()
print("| phase | size | A | B | B/A |")
print("|---|---:|---:|---:|---:|")
for phase in ("fast", "slow", "mixed"):
    for size in sorted({k[1] for k in runs if k[0] == phase}):
        a, b = runs.get((phase, size, 0), []), runs.get((phase, size, 1), [])
        if phase == "mixed":
            print("| mixed | %d | [%d] | [%d] | |" % (size, len(a), len(b)))
            continue
        ma = "%.2f [%d]" % (statistics.median(a), len(a)) if a else "- [0]"
        mb = "%.2f [%d]" % (statistics.median(b), len(b)) if b else "- [0]"
        ratio = "%.2f" % (statistics.median(b) / statistics.median(a)) if a and b else "-"
        print("| %s | %d | %s | %s | %s |" % (phase, size, ma, mb, ratio))
EOF
