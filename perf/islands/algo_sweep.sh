#!/usr/bin/env bash
# All-reduce busbw per algorithm (NCCL_ALGO forced) next to the selector's own pick, for local
# ranks split into emulated islands (ATOLL_ISLAND_SIZE), and how close the pick is to the best.
#
# usage: algo_sweep.sh [--build DIR] [--np N] [--island-size K] [--min B] [--max B] [--factor F]
#                      [--iters N] [--out DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../../build" np=8 island=4 min=8 max=16M factor=4 iters=10 out=/tmp/atoll-algo-sweep
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --np) np="$2"; shift 2 ;;
    --island-size) island="$2"; shift 2 ;;
    --min) min="$2"; shift 2 ;;
    --max) max="$2"; shift 2 ;;
    --factor) factor="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n 2,6p "$0"; exit 0 ;;
    *) echo "algo_sweep.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
run="$build/bin/atollrun" tool="$build/perf/all_reduce_perf"
[[ -x "$run" && -x "$tool" ]] || { echo "algo_sweep.sh: build atollrun and all_reduce_perf in $build first" >&2; exit 2; }
mkdir -p "$out"
common=(-np "$np" -x "ATOLL_ISLAND_SIZE=$island")
args=(-b "$min" -e "$max" -f "$factor" -n "$iters" -w 3 -c 1)
for algo in ring tree rhd rd direct hierarchical; do
  echo "== $algo" >&2
  "$run" "${common[@]}" -x "NCCL_ALGO=allreduce:$algo" "$tool" "${args[@]}" -J "$out/$algo.json" > "$out/$algo.log" 2>&1 ||
    echo "   ($algo: exit $?, see $out/$algo.log)" >&2
done
echo "== selector" >&2
"$run" "${common[@]}" -x NCCL_DEBUG=INFO -x NCCL_DEBUG_SUBSYS=TUNING "$tool" "${args[@]}" -J "$out/auto.json" \
  > "$out/auto.log" 2>&1
python3 - "$out" <<'PY'
import json, os, re, sys
out = sys.argv[1]
algos = ["ring", "tree", "rhd", "rd", "direct", "hierarchical"]
def load(name):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path): return {}
    try: d = json.load(open(path))
    except ValueError: return {}
    return {r["size"]: r["outOfPlace"]["busbw_gbps"] for r in d["results"] if r["outOfPlace"]["wrong"] == 0}
bw = {a: load(a) for a in algos}
auto = load("auto")
picks = {}
size = None  # the all-reduce size whose tuning table rank 0 is printing, if any
for line in open(os.path.join(out, "auto.log")):
    m = re.search(r"\[0\] NCCL INFO Tuning (\w+) (\d+) bytes", line)
    if m:
        size = int(m.group(2)) if m.group(1) == "AllReduce" else None
        continue
    m = re.search(r"\[0\] NCCL INFO\s+(\w+)\s+[\d.]+ us\s+<- chosen", line)
    if m and size is not None: picks[size] = m.group(1)
sizes = sorted(auto)
lines = ["| size (B) | " + " | ".join(algos) + " | selector (pick) | pick / best |", "|---:|" + "---:|" * (len(algos) + 2)]
for s in sizes:
    row = [bw[a].get(s) for a in algos]
    best = max((v for v in row if v is not None), default=None)
    cells = ["%.3f" % v if v is not None else "-" for v in row]
    ratio = "%.2f" % (auto[s] / best) if best else "-"
    lines.append("| %d | %s | %.3f (%s) | %s |" % (s, " | ".join(cells), auto[s], picks.get(s, "?"), ratio))
table = "\n".join(lines)
open(os.path.join(out, "table.md"), "w").write(table + "\n")
print(table)
PY
