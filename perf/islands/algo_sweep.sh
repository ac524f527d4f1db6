#!/usr/bin/env bash
# Busbw per algorithm (NCCL_ALGO forced) next to the selector's own pick, and how close the pick is
# to the best. Islands are local ranks split with ATOLL_ISLAND_SIZE, or with --hosts, emulated
# hosts (perf/islands/netns.sh: network namespaces, shm inside, TCP between, links shaped to
# --rate/--delay; needs root) with one island per host.
#
# usage: algo_sweep.sh [--build DIR] [--coll all_reduce|all_gather|reduce_scatter|broadcast|reduce]
#                      [--np N] [--island-size K | --hosts H [--rate 1gbit] [--delay 100us]
#                                                    [--hosts-per-island K --core-rate 1gbit]]
#                      [--conf FILE] [--fabric FILE] [--min B] [--max B] [--factor F] [--iters N] [--rounds R]
#                      [--out DIR]
#   --conf FILE    NCCL_CONF_FILE for every run (e.g. atoll-calibrate's output)
#   --fabric FILE  ATOLL_FABRIC_FILE for every run (--hosts names its hosts host0, host1, ...)
#   --hosts-per-island K, --core-rate R: a bridge per island of K hosts, islands joined through
#                  uplinks of R each way (ATOLL_ISLAND_SIZE tells the ranks)
#   --rounds R     run every algorithm and the selector R times, interleaved, and report medians
#                  (default 3: on a noisy host one run of the same algorithm can swing 2x)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../../build" coll=all_reduce np=8 island=4 hosts=0 rate="" delay="" conf="" fabric="" per=0 core=""
min=8 max=16M factor=4 iters=10 rounds=3 out=/tmp/atoll-algo-sweep
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --coll) coll="$2"; shift 2 ;;
    --np) np="$2"; shift 2 ;;
    --island-size) island="$2"; shift 2 ;;
    --hosts) hosts="$2"; shift 2 ;;
    --rate) rate="$2"; shift 2 ;;
    --delay) delay="$2"; shift 2 ;;
    --hosts-per-island) per="$2"; shift 2 ;;
    --core-rate) core="$2"; shift 2 ;;
    --conf) conf="$(realpath "$2")"; shift 2 ;;
    --fabric) fabric="$(realpath "$2")"; shift 2 ;;
    --min) min="$2"; shift 2 ;;
    --max) max="$2"; shift 2 ;;
    --factor) factor="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n 2,16p "$0"; exit 0 ;;
    *) echo "algo_sweep.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$coll" in
  all_reduce) algos="ring tree rhd rd direct hierarchical" key=allreduce name=AllReduce ;;
  all_gather) algos="ring bruck hierarchical" key=allgather name=AllGather ;;
  reduce_scatter) algos="ring hierarchical" key=reducescatter name=ReduceScatter ;;
  broadcast) algos="ring binomial hierarchical" key=broadcast name=Broadcast ;;
  reduce) algos="ring binomial hierarchical" key=reduce name=Reduce ;;
  *) echo "algo_sweep.sh: --coll $coll is not swept (all_reduce, all_gather, reduce_scatter, broadcast, reduce)" >&2
     exit 2 ;;
esac
run="$build/bin/atollrun" tool="$build/perf/${coll}_perf"
[[ -x "$run" && -x "$tool" ]] || { echo "algo_sweep.sh: build atollrun and ${coll}_perf in $build first" >&2; exit 2; }
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.log*
args=(-b "$min" -e "$max" -f "$factor" -n "$iters" -w 3 -c 1)
extra=()
[[ -z "$conf" ]] || extra+=("NCCL_CONF_FILE=$conf")
[[ -z "$fabric" ]] || extra+=("ATOLL_FABRIC_FILE=$fabric")
if ((hosts > 0)); then
  source "$here/netns.sh"
  netns_available || { echo "algo_sweep.sh: --hosts needs root and iproute2" >&2; exit 2; }
  netns_up "atlsw$$" "$hosts" "$rate" "$delay" "$per" "$core"
  ((per > 0)) && extra+=("ATOLL_ISLAND_SIZE=$((per * np / hosts))")
fi
# job NAME VAR=VALUE...: one run of the tool, rank 0's output in $out/NAME.log.
job() {
  local name=$1
  shift
  if ((hosts > 0)); then
    netns_run "$np" 900 "$out/$name.log" "${extra[@]}" "$@" -- "$tool" "${args[@]}" -J "$out/$name.json"
  else
    local xs=(-x "ATOLL_ISLAND_SIZE=$island") e
    for e in "${extra[@]}" "$@"; do xs+=(-x "$e"); done
    "$run" -np "$np" "${xs[@]}" "$tool" "${args[@]}" -J "$out/$name.json" > "$out/$name.log" 2>&1
  fi
}
for ((round = 1; round <= rounds; round++)); do
  for algo in $algos; do
    echo "== round $round: $algo" >&2
    job "$algo.$round" "NCCL_ALGO=$key:$algo" || echo "   ($algo: exit $?, see $out/$algo.$round.log)" >&2
  done
  echo "== round $round: selector" >&2
  job "auto.$round" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING
done
python3 - "$out" "$algos" "$name" "$rounds" <<'PY'
import json, os, re, sys
out = sys.argv[1]
algos = sys.argv[2].split()
rounds = int(sys.argv[4])
def load1(name):
    path = os.path.join(out, name + ".json")
    if not os.path.exists(path): return {}
    try: d = json.load(open(path))
    except ValueError: return {}
    return {r["size"]: r["outOfPlace"]["busbw_gbps"] for r in d["results"] if r["outOfPlace"]["wrong"] == 0}
def load(name):  # median over the rounds that produced the size
    runs = [load1("%s.%d" % (name, r)) for r in range(1, rounds + 1)]
    sizes = set().union(*runs)
    med = {}
    for s in sizes:
        v = sorted(run[s] for run in runs if s in run)
        med[s] = v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2
    return med
bw = {a: load(a) for a in algos}
auto = load("auto")
picks = {}
size = None  # the size of the swept collective whose tuning table rank 0 is printing, if any
for line in open(os.path.join(out, "auto.1.log")):
    m = re.search(r"\[0\] NCCL INFO Tuning (\w+) (\d+) bytes", line)
    if m:
        size = int(m.group(2)) if m.group(1) == sys.argv[3] else None
        continue
    m = re.search(r"\[0\] NCCL INFO\s+(\w+)\s+[\d.]+ us\s+<- chosen", line)
    if m and size is not None: picks[size] = m.group(1)
sizes = sorted(auto)
# Two ratios: the selector's own run against the best forced one (includes run-to-run noise), and
# the forced run of the algorithm it picked against the best (the quality of the choice alone).
lines = ["| size (B) | " + " | ".join(algos) + " | selector (pick) | selector / best | pick forced / best |",
         "|---:|" + "---:|" * (len(algos) + 3)]
ratios, choice = [], []
for s in sizes:
    row = [bw[a].get(s) for a in algos]
    best = max((v for v in row if v is not None), default=None)
    cells = ["%.3f" % v if v is not None else "-" for v in row]
    pick = picks.get(s, "?")
    forced = bw.get(pick, {}).get(s)
    r1 = auto[s] / best if best else None
    r2 = forced / best if best and forced is not None else None
    if r1 is not None: ratios.append(r1)
    if r2 is not None: choice.append(r2)
    lines.append("| %d | %s | %.3f (%s) | %s | %s |" % (s, " | ".join(cells), auto[s], pick,
                 "%.2f" % r1 if r1 is not None else "-", "%.2f" % r2 if r2 is not None else "-"))
def summary(name, xs):
    xs = sorted(xs)
    return "%s: median %.2f, min %.2f" % (name, xs[len(xs) // 2], xs[0]) if xs else name + ": -"
lines.append("")
lines.append("over %d sizes, medians of %d rounds: %s; %s" % (len(sizes), rounds, summary("selector / best", ratios),
             summary("pick forced / best", choice)))
table = "\n".join(lines)
open(os.path.join(out, "table.md"), "w").write(table + "\n")
print(table)
PY
