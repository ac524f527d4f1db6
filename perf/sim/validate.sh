#!/usr/bin/env bash
# validate.sh: atoll-sim against an emulated cluster. Runs every all-reduce algorithm (and the
# selector) on H emulated hosts (perf/islands/netns.sh: shm inside a host, TCP between hosts
# through a bridge, each host's egress shaped to RATE with tc tbf), then simulates the same
# cluster (H hosts of NP/H ranks, one NIC of RATE each, one island per host, a non-blocking
# switch, the calibrated step overhead) and prints measured and simulated busbw with the error
# per size and algorithm. tbf shapes rate, not latency, so compare at bandwidth-bound sizes.
# The simulated NIC carries TCP's payload share of what tbf lets through: 1448 bytes of every
# 1514-byte frame (MTU 1500 less IP and TCP headers with timestamps, plus the Ethernet header tbf
# counts), 95.6% of RATE.
#
# usage: validate.sh [--build DIR] [--hosts H] [--np N] [--rate-gbit R] [--min B] [--max B]
#                    [--factor F] [--algos "ring hierarchical ..."] [--rounds R] [--out DIR]
#                    [--shm-gbs X]       (the simulated hosts' shm bandwidth per rank, GB/s; 4)
#                    [--max-error PCT]   (exit 1 if any |error| is above PCT)
#                    [--hosts-per-island K --core-gbit C]
#                                        (a bridge per island of K hosts, the islands joined by a
#                                        core through uplinks of C Gbit/s each way; the ranks and
#                                        the simulator get the same fabric file, a core
#                                        oversubscribed K*R/C)
# "selector" in --algos compares the selector's own runs with the simulated busbw of the algorithm
# atoll-sim's selector picks for the same cluster.
# Needs root and iproute2 (exit 77, "skipped", when namespaces cannot be made).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$here/../../build" hosts=4 np=8 rate=1 min=4M max=32M factor=2 algos="ring tree rhd rd hierarchical"
rounds=1 out=/tmp/atoll-sim-validate maxerr="" shm=4 per=0 core=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --build) build="$2"; shift 2 ;;
    --hosts) hosts="$2"; shift 2 ;;
    --np) np="$2"; shift 2 ;;
    --rate-gbit) rate="$2"; shift 2 ;;
    --min) min="$2"; shift 2 ;;
    --max) max="$2"; shift 2 ;;
    --factor) factor="$2"; shift 2 ;;
    --algos) algos="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --max-error) maxerr="$2"; shift 2 ;;
    --shm-gbs) shm="$2"; shift 2 ;;
    --hosts-per-island) per="$2"; shift 2 ;;
    --core-gbit) core="$2"; shift 2 ;;
    -h|--help) sed -n 2,23p "$0"; exit 0 ;;
    *) echo "validate.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
((np % hosts == 0)) || { echo "validate.sh: --np must be a multiple of --hosts" >&2; exit 2; }
source "$here/../islands/netns.sh"
netns_available || { echo "validate.sh: skipped: network namespaces cannot be created here (needs root and iproute2)"; exit 77; }
sim="$build/bin/atoll-sim"
[[ -x "$sim" ]] || { echo "validate.sh: build atoll-sim in $build first" >&2; exit 2; }
mkdir -p "$out"
goodput=$(python3 -c "print($rate * 1448 / 1514)")
islands=()
# How atoll-sim is told the cluster: hosts of NP/H ranks with one NIC each, then either an island
# per host on a non-blocking switch or the fabric file the ranks read.
cluster=(--nodes "$hosts" --nodes-per-leaf 1 --leaves-per-island 1 --global-oversub 1)
if ((per > 0)); then
  [[ -n "$core" ]] || { echo "validate.sh: --hosts-per-island needs --core-gbit" >&2; exit 2; }
  ((hosts % per == 0)) || { echo "validate.sh: --hosts must be a multiple of --hosts-per-island" >&2; exit 2; }
  oversub=$(python3 -c "print(max(1.0, $per * $rate / $core))")
  # The ranks' view of the same cluster: hosts host0.. (perf/islands/netns.sh names them so), an
  # island per bridge, the core's share per host (docs/TOPOLOGY.md's format).
  gbs=$(python3 -c "print($goodput / 8)")
  {
    echo "level leaf bw=$gbs lat=20"
    echo "level global bw=$gbs lat=40 oversub=$oversub"
    for ((i = 0; i < hosts / per; i++)); do
      list=""
      for ((h = i * per; h < (i + 1) * per; h++)); do list+="${list:+,}host$h"; done
      echo "leaf l$i island=pod$i hosts=$list"
    done
  } > "$out/fabric.txt"
  islands=(--hosts-per-island "$per" --core-rate "${core}gbit" --fabric "$out/fabric.txt")
  cluster=(--fabric "$out/fabric.txt")
fi
# The measured side: perf/islands/algo_sweep.sh forces each algorithm in turn on the emulated hosts.
bash "$here/../islands/algo_sweep.sh" --build "$build" --np "$np" --hosts "$hosts" --rate "${rate}gbit" "${islands[@]}" \
  --min "$min" --max "$max" --factor "$factor" --rounds "$rounds" --out "$out/measured" > "$out/sweep.txt" 2> "$out/sweep.log"
# The simulated side: the same cluster, described to atoll-sim.
"$sim" "${cluster[@]}" --gpus $((np / hosts)) --nics 1 --nic-gbps "$goodput" --intra-gbs "$shm" --channels 2 --algos "$(echo $algos | tr ' ' '\n' | grep -vx selector | paste -sd,)" \
  -b "$min" -e "$max" -f "$factor" --csv "$out/simulated.csv" > "$out/simulated.txt" 2>&1
python3 - "$out" "$algos" "$rounds" "$maxerr" <<'PY'
import csv, json, os, sys
out, algos, rounds, maxerr = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), sys.argv[4]
def measured(algo):
    runs = []
    for r in range(1, rounds + 1):
        path = os.path.join(out, "measured", "%s.%d.json" % (algo, r))
        if not os.path.exists(path): continue
        d = json.load(open(path))
        runs.append({x["size"]: x["outOfPlace"]["busbw_gbps"] for x in d["results"] if x["outOfPlace"]["wrong"] == 0})
    med = {}
    for s in set().union(*runs) if runs else []:
        v = sorted(run[s] for run in runs if s in run)
        med[s] = v[len(v) // 2]
    return med
sim, picks = {}, {}
for row in csv.DictReader(open(os.path.join(out, "simulated.csv"))):
    sim[(row["algo"], int(row["bytes"]))] = float(row["busbw_gbs"])
    if row["picked"] == "1":
        sim[("auto", int(row["bytes"]))] = float(row["busbw_gbs"])
        picks[int(row["bytes"])] = row["algo"]
lines = ["| size (B) | algorithm | measured busbw (GB/s) | simulated | error |", "|---:|---|---:|---:|---:|"]
worst = 0.0
for algo in [("auto" if a == "selector" else a) for a in algos]:
    m = measured(algo)
    for size in sorted(m):
        s = sim.get((algo, size))
        if s is None: continue
        err = (s - m[size]) / m[size] * 100
        worst = max(worst, abs(err))
        name = "selector (sim picks %s)" % picks[size] if algo == "auto" else algo
        lines.append("| %d | %s | %.4f | %.4f | %+.1f%% |" % (size, name, m[size], s, err))
lines.append("")
lines.append("largest |error|: %.1f%%" % worst)
print("\n".join(lines))
open(os.path.join(out, "table.md"), "w").write("\n".join(lines) + "\n")
if maxerr and worst > float(maxerr):
    print("validate.sh: an error is above %s%%" % maxerr)
    sys.exit(1)
PY
