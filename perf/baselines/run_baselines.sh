#!/usr/bin/env bash
# Side-by-side all-reduce (float sum) busbw on local ranks:
#   atoll_shm     build/perf/all_reduce_perf under atollrun (shared-memory transport)
#   atoll_shm_pool  the same with -R 1: buffers from ncclMemAlloc, which shm links move in a
#                 single copy (the peer maps them and reads them in place)
#   atoll_socket  the same with NCCL_SHM_DISABLE=1 (TCP sockets over loopback)
#   mpi           build/perf/mpi_allreduce_bench: Open MPI's MPI_Allreduce (its own tuned choice)
#   gloo_ring     build/perf/gloo_allreduce_bench -A ring: gloo::AllreduceRing over TCP
#   gloo_hd       build/perf/gloo_allreduce_bench -A hd: gloo::AllreduceHalvingDoubling over TCP
# and the single-core memcpy bandwidth (build/perf/memcpy_bw, 64 MiB). All programs share
# all_reduce_perf's timing (per-rank mean time, averaged over ranks) and busbw = algbw*2(n-1)/n.
#
# usage: run_baselines.sh [--np "2 4"] [--min 8] [--max 256M] [--factor 2] [--iters 20] [--warmup 2]
#                         [--place in|out] [--build DIR] [--out DIR] [--timeout SECONDS]
#                         [--rounds N] [--interleave sweep|size]
#                         [--systems "atoll_shm atoll_shm_pool atoll_socket mpi gloo_ring gloo_hd"]
# --rounds N runs every system N times, interleaved (round 1 of each, then round 2, ...), and
# tabulates the median of each size's time and bandwidth: load from anything else on the machine
# then hits every system alike. ratios.md gives Atoll's busbw over Open MPI's per size.
# --interleave size runs every size as a run of its own, all systems and rounds of one size before
# the next size, so the runs compared with each other are seconds apart rather than minutes (a
# whole sweep is the default).
# Before every run, build/perf/core_rtt measures the core-to-core cache-line round trip: on a VM it
# moves with the host's placement of the virtual CPUs (2-5x on the development VM, from one second
# to the next), and shared-memory times move with it; it is measured again after the run.
# phases.csv records both, rounds.csv the slower, and ratios.md adds Atoll over Open MPI paired run
# by run within each round, and the ratio of the medians of the runs that began and ended in the
# fast phase (round trip under 1.5x the fastest seen), and of the rest.
# Writes to --out: table.md, ratios.md, results.csv, rounds.csv, phases.csv, busbw_np<N>.png,
# targets.txt, mpi_config.txt, memcpy.txt, json/<system>_np<N>_r<R>[_s<bytes>].json, plot/*.dat
# and logs/. Prints the targets section at the end.
#
# Open MPI settings, and why:
#   --mca pml ob1 --mca btl self,vader   shared memory through vader (Debian's build would
#       otherwise prefer UCX); single-copy CMA is used when a probe shows it works here, else
#       btl_vader_single_copy_mechanism=none (mpi_config.txt says which).
#   --bind-to none   atollrun and Gloo do not pin ranks, and with more ranks than cores (4 on 2)
#       binding to cores would stack ranks on one core; so nobody is pinned.
#   --oversubscribe  allows more ranks than cores, as atollrun does.
#   no coll_tuned_* setting: MPI_Allreduce uses coll/tuned's fixed decision rules (recorded).
# Everything runs sequentially; never start two benchmarks at once on this machine.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
np_list="2 4"
min=8
max=256M
factor=2
iters=20
warmup=2
place=in
build="$repo/build"
out=""
limit=900
rounds=1
interleave=sweep
systems="atoll_shm atoll_shm_pool atoll_socket mpi gloo_ring gloo_hd"

die() {
  echo "run_baselines.sh: $*" >&2
  exit 1
}
usage() {
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit "${1:-0}"
}

while (($#)); do
  case "$1" in
    --np) np_list="$2"; shift 2 ;;
    --min) min="$2"; shift 2 ;;
    --max) max="$2"; shift 2 ;;
    --factor) factor="$2"; shift 2 ;;
    --iters) iters="$2"; shift 2 ;;
    --warmup) warmup="$2"; shift 2 ;;
    --place) place="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --timeout) limit="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --interleave) interleave="$2"; shift 2 ;;
    --systems) systems="$2"; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "run_baselines.sh: unknown argument $1" >&2; usage 2 ;;
  esac
done
[[ "$place" == in || "$place" == out ]] || die "--place takes in or out"
[[ -n "$np_list" ]] || die "--np needs at least one rank count"
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || die "--rounds: '$rounds' is not a positive count"
[[ "$interleave" == sweep || "$interleave" == size ]] || die "--interleave takes sweep or size"
for sys in $systems; do
  [[ " atoll_shm atoll_shm_pool atoll_socket mpi gloo_ring gloo_hd " == *" $sys "* ]] || die "--systems: unknown system '$sys'"
done
command -v python3 > /dev/null || die "missing python3 (medians of the rounds)"
for np in $np_list; do
  [[ "$np" =~ ^[1-9][0-9]*$ ]] || die "--np: '$np' is not a rank count"
done
build="$(cd "$build" 2>/dev/null && pwd)" || die "build directory not found (pass --build DIR)"
[[ -n "$out" ]] || out="$build/perf/baselines"

# Every program first, so a missing one fails before anything runs.
atollrun="$build/bin/atollrun"
atoll_perf="$build/perf/all_reduce_perf"
mpi_bench="$build/perf/mpi_allreduce_bench"
gloo_bench="$build/perf/gloo_allreduce_bench"
memcpy_bw="$build/perf/memcpy_bw"
core_rtt="$build/perf/core_rtt"
need() {  # path, how to get it
  [[ -x "$1" ]] || die "missing $1: $2"
}
hint="build it with: ninja -C $build baselines"
need "$atollrun" "$hint"
need "$atoll_perf" "$hint"
need "$memcpy_bw" "$hint"
need "$core_rtt" "$hint"
need "$mpi_bench" "configure did not find Open MPI (apt-get install openmpi-bin libopenmpi-dev), or $hint"
need "$gloo_bench" "configure did not find Gloo (apt-get install libgloo-dev), or $hint"
mpirun="$(command -v mpirun || true)"
[[ -n "$mpirun" ]] || die "missing mpirun (apt-get install openmpi-bin)"
command -v gnuplot > /dev/null || die "missing gnuplot (apt-get install gnuplot-nox)"
command -v timeout > /dev/null || die "missing timeout (coreutils)"

place_label=$([[ "$place" == in ]] && echo in-place || echo out-of-place)
mkdir -p "$out/json" "$out/logs" "$out/plot"
out="$(cd "$out" && pwd)"
store="$(mktemp -d "${TMPDIR:-/tmp}/atoll-baselines.XXXXXX")"
trap 'rm -rf "$store"' EXIT

to_bytes() {  # 8, 64K, 4M, 1G (as the tools read them) -> bytes
  local text=$1 unit=1
  case ${text: -1} in
    K | k) unit=$((1 << 10)); text=${text%?} ;;
    M | m) unit=$((1 << 20)); text=${text%?} ;;
    G | g) unit=$((1 << 30)); text=${text%?} ;;
  esac
  [[ "$text" =~ ^[1-9][0-9]*$ ]] || die "'$1' is not a size"
  echo $((text * unit))
}
if [[ "$interleave" == size ]]; then
  [[ "$factor" =~ ^[2-9]$|^[1-9][0-9]+$ ]] || die "--interleave size needs a whole --factor of 2 or more"
  sizes=()
  max_bytes=$(to_bytes "$max")
  for ((size = $(to_bytes "$min"); size <= max_bytes; size *= factor)); do sizes+=("$size"); done
  ((${#sizes[@]} > 0)) || die "no size between --min $min and --max $max"
else
  sizes=(all)
fi

run_logged() {  # log file, command...: runs it with a time limit; on failure shows the log and stops
  local log=$1
  shift
  echo "+ $*" > "$log"
  if ! timeout --kill-after=10 "$limit" "$@" >> "$log" 2>&1; then
    tail -n 25 "$log" >&2
    die "failed (full log: $log): $*"
  fi
}

# --- Open MPI settings: shared memory via vader, CMA single copy when it works here.
mpi_base=(--allow-run-as-root --oversubscribe --bind-to none --mca pml ob1 --mca btl "self,vader")
single_copy="cma"
echo "== probing Open MPI's vader single-copy (CMA) with 2 ranks"
# 4 MiB messages take vader's single-copy path; a failed process_vm_readv aborts the run.
probe=("$mpirun" "${mpi_base[@]}" -np 2 "$mpi_bench" -b 4M -e 4M -n 2 -w 1 -c 1)
if ! timeout --kill-after=10 120 "${probe[@]}" > "$out/logs/mpi_cma_probe.log" 2>&1; then
  single_copy="none"
  echo "   CMA probe failed (see logs/mpi_cma_probe.log); using btl_vader_single_copy_mechanism=none"
fi
mpi_args=("${mpi_base[@]}" --mca btl_vader_single_copy_mechanism "$single_copy")
# Which coll component MPI_Allreduce lands in (coll_base_verbose prints the per-communicator pick).
run_logged "$out/logs/mpi_coll_select.log" "$mpirun" "${mpi_args[@]}" --mca coll_base_verbose 20 -np 2 \
  "$mpi_bench" -b 8 -e 8 -n 1 -w 0 -c 1
{
  echo "mpirun: $("$mpirun" --version 2>&1 | head -n 1)"
  echo "flags: ${mpi_args[*]}"
  if [[ "$single_copy" == cma ]]; then
    echo "vader single copy: cma (probe with 4 MiB messages passed)"
  else
    echo "vader single copy: none (cma probe failed: logs/mpi_cma_probe.log)"
  fi
  echo "binding: none (as atollrun and Gloo; 4 ranks on $(nproc) cores)"
  echo "coll modules on MPI_COMM_WORLD, rank 0's view (coll_base_verbose; the highest enabled priority"
  echo "providing allreduce serves MPI_Allreduce):"
  awk '/comm_select: new communicator: MPI_COMM_WORLD/ && pid == "" { pid = $1 }
       $1 != pid { next }
       /comm_select: new communicator:/ { on = /MPI_COMM_WORLD/ }
       on && /comm_select: selecting/ { sub(/^.*selecting */, ""); print "  " $0 }' "$out/logs/mpi_coll_select.log"
  ompi_info --param coll tuned --level 9 2> /dev/null | grep -E "coll_tuned_(use_dynamic_rules|allreduce_algorithm)\"" |
    sed 's/^ */  /' || true
  cat << 'EOF'
allreduce algorithm: not forced; coll/tuned's fixed decision (Open MPI 4.1.x coll_tuned_decision_fixed.c,
commutative ops, total bytes S):
  np < 4: S < 8 ring, < 4K recursive doubling, < 8K ring, < 16K recursive doubling, < 64K ring,
          < 256K segmented ring, else rabenseifner (reduce-scatter + allgather)
  np < 8: S < 16 ring, < 8K recursive doubling, else rabenseifner
EOF
} > "$out/mpi_config.txt"

# --- memcpy yardstick: measured before and after the benchmarks, the better run kept (noise only
# ever slows a run down).
memcpy_run() {  # label
  run_logged "$out/logs/memcpy_$1.log" "$memcpy_bw" 64M 15
  awk '$1 == "memcpy_gbps" { print $2 }' "$out/logs/memcpy_$1.log"
}
echo "== memcpy bandwidth (64 MiB, one core)"
memcpy_before="$(memcpy_run before)"
[[ -n "$memcpy_before" ]] || die "cannot read memcpy_bw output ($out/logs/memcpy_before.log)"

# --- The benchmarks, one at a time; with --rounds, every system once per round, and with
# --interleave size, all of that for one size before the next.
phases_csv="$out/phases.csv"
echo "system,np,round,size_bytes,core_rtt_ns,core_rtt_after_ns" > "$phases_csv"
rtt_now() {  # log file: the round trip now, in ns; nothing where it cannot be measured (one CPU)
  if timeout --kill-after=5 10 "$core_rtt" > "$1" 2>&1; then
    awk '$1 == "core_rtt_ns" { print $2 }' "$1"
  fi
}
rm -f "$out"/json/*.json
for size in "${sizes[@]}"; do
  if [[ "$size" == all ]]; then
    span=(-b "$min" -e "$max" -f "$factor")
    tag=""
  else
    span=(-b "$size" -e "$size")
    tag="_s$size"
  fi
  for ((round = 1; round <= rounds; round++)); do
    for np in $np_list; do
      for sys in $systems; do
        json="$out/json/${sys}_np${np}_r$round$tag.json"
        log="$out/logs/${sys}_np${np}_r$round$tag.log"
        echo "== round $round/$rounds: $sys np=$np${tag:+ size ${size}}"
        rtt=$(rtt_now "$log.rtt")
        common=("${span[@]}" -n "$iters" -w "$warmup" -c 1)
        case $sys in
          atoll_shm) run_logged "$log" env -u NCCL_SHM_DISABLE "$atollrun" -np "$np" "$atoll_perf" "${common[@]}" -J "$json" ;;
          atoll_shm_pool)
            run_logged "$log" env -u NCCL_SHM_DISABLE "$atollrun" -np "$np" "$atoll_perf" -R 1 "${common[@]}" -J "$json"
            ;;
          atoll_socket) run_logged "$log" "$atollrun" -np "$np" -x NCCL_SHM_DISABLE=1 "$atoll_perf" "${common[@]}" -J "$json" ;;
          mpi) run_logged "$log" "$mpirun" "${mpi_args[@]}" -np "$np" "$mpi_bench" "${common[@]}" -J "$json" ;;
          gloo_ring | gloo_hd)
            run_logged "$log" "$atollrun" -np "$np" "$gloo_bench" -A "${sys#gloo_}" -S "$store/$sys-np$np-r$round$tag" \
              "${common[@]}" -J "$json"
            ;;
        esac
        [[ -s "$json" ]] || die "$sys np=$np round $round wrote no JSON ($log)"
        rtt_after=$(rtt_now "$log.rtt_after")
        [[ -n "$rtt" && -n "$rtt_after" ]] || echo "   no core-to-core round trip for this run ($log.rtt*)"
        echo "$sys,$np,$round,$size,$rtt,$rtt_after" >> "$phases_csv"
      done
    done
  done
done

memcpy_after="$(memcpy_run after)"
[[ -n "$memcpy_after" ]] || die "cannot read memcpy_bw output ($out/logs/memcpy_after.log)"
memcpy_gbps="$(awk -v a="$memcpy_before" -v b="$memcpy_after" 'BEGIN { printf "%.3f", (a > b) ? a : b }')"
echo "memcpy 64 MiB one core: before $memcpy_before GB/s, after $memcpy_after GB/s, used $memcpy_gbps GB/s" |
  tee "$out/memcpy.txt"

# --- JSON -> CSV. The tools write one result object per line (perf/common/report.cc); rounds.csv
# keeps every round, results.csv the per-size medians.
rounds_csv="$out/rounds.csv"
echo "system,np,round,size_bytes,place,time_us,algbw_gbps,busbw_gbps,wrong,core_rtt_ns" > "$rounds_csv"
for size in "${sizes[@]}"; do
  tag=$([[ "$size" == all ]] || echo "_s$size")
  for ((round = 1; round <= rounds; round++)); do
    for np in $np_list; do
      for sys in $systems; do
        # The slower of the round trips before and after the run: a run is only called fast when
        # it began and ended in the fast placement.
        rtt=$(awk -F, -v s="$sys" -v n="$np" -v r="$round" -v z="$size" \
          '$1 == s && $2 == n && $3 == r && $4 == z && $5 != "" && $6 != "" { print ($5 + 0 > $6 + 0) ? $5 : $6 }' "$phases_csv")
        awk -v sys="$sys" -v np="$np" -v round="$round" -v rtt="$rtt" '
          function num(text, key,   i, rest) {
            i = index(text, "\"" key "\": ")
            if (i == 0) return ""
            rest = substr(text, i + length(key) + 4)
            sub(/[,}].*/, "", rest)
            return rest
          }
          /"size": / {
            cut = index($0, "\"inPlace\"")
            oop = substr($0, 1, cut - 1)
            ip = substr($0, cut)
            size = num($0, "size")
            printf "%s,%s,%s,%s,out,%s,%s,%s,%s,%s\n", sys, np, round, size, num(oop, "time_us"), num(oop, "algbw_gbps"), num(oop, "busbw_gbps"), num(oop, "wrong"), rtt
            printf "%s,%s,%s,%s,in,%s,%s,%s,%s,%s\n", sys, np, round, size, num(ip, "time_us"), num(ip, "algbw_gbps"), num(ip, "busbw_gbps"), num(ip, "wrong"), rtt
          }' "$out/json/${sys}_np${np}_r$round$tag.json" >> "$rounds_csv"
      done
    done
  done
done
csv="$out/results.csv"
python3 - "$rounds_csv" "$csv" << 'EOF'
import csv, statistics, sys
rows = {}
with open(sys.argv[1]) as f:
    for r in csv.DictReader(f):
        rows.setdefault((r["system"], r["np"], r["size_bytes"], r["place"]), []).append(r)
with open(sys.argv[2], "w") as f:
    f.write("system,np,size_bytes,place,time_us,algbw_gbps,busbw_gbps,wrong\n")
    for key, rs in rows.items():
        med = lambda k: statistics.median(float(r[k]) for r in rs)
        wrong = max(int(float(r["wrong"] or 0)) for r in rs)
        f.write("%s,%s,%s,%s,%.3f,%.4f,%.4f,%d\n" % (*key, med("time_us"), med("algbw_gbps"), med("busbw_gbps"), wrong))
EOF

# --- Markdown table: one row per size, one busbw column per system and rank count.
{
  echo "# All-reduce busbw (GB/s), float sum, $place_label"
  echo
  echo "busbw = algbw * 2(n-1)/n, algbw = bytes / time; time = per-rank mean over $iters iterations"
  echo "(median of $rounds interleaved round(s))"
  echo "($warmup warm-up), averaged over ranks (all_reduce_perf's method). Host: $(nproc) cores,"
  echo "$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo 2> /dev/null || echo unknown CPU)."
  echo "memcpy (one core, 64 MiB): $memcpy_gbps GB/s. MPI: $(sed -n 's/^flags: //p' "$out/mpi_config.txt")."
  echo
  awk -F, -v place="$place" -v nps="$np_list" -v syss="$systems" '
    function human(b) {
      if (b >= 1073741824 && b % 1073741824 == 0) return (b / 1073741824) " GiB"
      if (b >= 1048576 && b % 1048576 == 0) return (b / 1048576) " MiB"
      if (b >= 1024 && b % 1024 == 0) return (b / 1024) " KiB"
      return b " B"
    }
    NR > 1 && $4 == place {
      if (!($3 in seen)) { seen[$3] = 1; order[++nsizes] = $3 }
      bw[$1 "," $2 "," $3] = $7
    }
    END {
      nn = split(nps, npa, " "); ns = split(syss, sa, " ")
      line = "| size |"; rule = "|---:|"
      for (i = 1; i <= nn; i++) for (j = 1; j <= ns; j++) { line = line " " sa[j] " np" npa[i] " |"; rule = rule "---:|" }
      print line; print rule
      for (k = 1; k <= nsizes; k++) {
        line = "| " human(order[k]) " |"
        for (i = 1; i <= nn; i++) for (j = 1; j <= ns; j++) {
          key = sa[j] "," npa[i] "," order[k]
          line = line " " ((key in bw) ? sprintf("%.3f", bw[key]) : "-") " |"
        }
        print line
      }
    }' "$csv"
} > "$out/table.md"

# --- Ratios: each Atoll shm system's busbw over Open MPI's, per size (the time ratio's inverse).
if [[ " $systems " == *" mpi "* ]]; then
  python3 - "$csv" "$place" "$np_list" "$systems" "$rounds" "$rounds_csv" > "$out/ratios.md" << 'EOF'
import csv, statistics, sys
path, place, nps, systems, rounds, rounds_path = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split(), sys.argv[5], sys.argv[6]
ours = [s for s in systems if s.startswith("atoll_shm")]
bw = {}
for r in csv.DictReader(open(path)):
    if r["place"] == place:
        bw[(r["system"], r["np"], int(r["size_bytes"]))] = float(r["busbw_gbps"])
sizes = sorted({k[2] for k in bw})
def human(b):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= div and b % div == 0:
            return "%d %s" % (b // div, unit)
    return "%d B" % b
print("# Atoll busbw / Open MPI busbw, %s, median of %s round(s)" % ("in place" if place == "in" else "out of place", rounds))
print()
cols = ["%s np%s" % (s, n) for n in nps for s in ours]
print("| size | " + " | ".join(cols) + " |")
print("|---:|" + "---:|" * len(cols))
for size in sizes:
    cells = []
    for n in nps:
        for s in ours:
            a, m = bw.get((s, n, size)), bw.get(("mpi", n, size))
            cells.append("%.2fx" % (a / m) if a and m else "-")
    print("| %s | %s |" % (human(size), " | ".join(cells)))

# The same ratio in two more ways. Paired: each round's Atoll run over the same round's Open MPI
# run, the two runs closest in time. By phase: the median of each system's runs that began and
# ended with the core-to-core round trip under 1.5x the fastest one seen (the VM's fast placement
# of its CPUs), over the same for Open MPI; then the same for the other runs.
runs = {}
for r in csv.DictReader(open(rounds_path)):
    if r["place"] == place and r["busbw_gbps"] and r["core_rtt_ns"]:
        runs[(r["system"], r["np"], int(r["size_bytes"]), r["round"])] = (float(r["busbw_gbps"]), float(r["core_rtt_ns"]))
if runs:
    fast_below = 1.5 * min(rtt for _, rtt in runs.values())
    print()
    print("## Paired run by run, and by phase")
    print()
    print("paired: the median over rounds of (Atoll busbw / Open MPI busbw) within a round [pairs].")
    print("fast: the median busbw of each system's runs that began and ended with the core-to-core round")
    print("trip under %.0f ns, Atoll's over Open MPI's [runs of each]; slow: the same for the other runs." % fast_below)
    print()
    heads = ["%s np%s %s" % (s, n, k) for n in nps for s in ours for k in ("paired", "fast", "slow")]
    print("| size | " + " | ".join(heads) + " |")
    print("|---:|" + "---:|" * len(heads))
    def phase_ratio(s, n, size, fast):
        pick = lambda sy: [bw for (x, y, z, _), (bw, rtt) in runs.items() if (x, y, z) == (sy, n, size) and (rtt < fast_below) == fast]
        a, m = pick(s), pick("mpi")
        if not a or not m or statistics.median(m) <= 0:
            return "- [%d/%d]" % (len(a), len(m))
        return "%.2fx [%d/%d]" % (statistics.median(a) / statistics.median(m), len(a), len(m))
    for size in sizes:
        cells = []
        for n in nps:
            for s in ours:
                paired = [a / runs[("mpi", n, size, rnd)][0] for (sy, npx, sz, rnd), (a, _) in runs.items()
                          if (sy, npx, sz) == (s, n, size) and runs.get(("mpi", n, size, rnd), (0,))[0] > 0]
                cells.append("%.2fx [%d]" % (statistics.median(paired), len(paired)) if paired else "-")
                cells.append(phase_ratio(s, n, size, True))
                cells.append(phase_ratio(s, n, size, False))
        print("| %s | %s |" % (human(size), " | ".join(cells)))
EOF
fi

# --- Plots: busbw vs size per rank count.
for np in $np_list; do
  plot_cmd=""
  for sys in $systems; do
    dat="$out/plot/${sys}_np$np.dat"
    awk -F, -v s="$sys" -v n="$np" -v p="$place" '$1 == s && $2 == n && $4 == p { print $3, $7 }' "$csv" > "$dat"
    plot_cmd+="${plot_cmd:+, }'$dat' using 1:2 with linespoints title '$sys'"
  done
  terminal="pngcairo noenhanced size 1400,600"
  gnuplot -e "set terminal pngcairo" > /dev/null 2>&1 || terminal="png noenhanced size 1400,600"
  # Two panels: linear busbw shows the large messages, log busbw the small ones.
  gnuplot > "$out/logs/gnuplot_np$np.log" 2>&1 << EOF || die "gnuplot failed ($out/logs/gnuplot_np$np.log)"
set terminal $terminal
set output '$out/busbw_np$np.png'
set multiplot layout 1,2 title "All-reduce busbw, float sum, $np local ranks, $place_label (memcpy $memcpy_gbps GB/s)"
set xlabel 'message size'
set ylabel 'busbw (GB/s)'
set logscale x 2
set format x '%.0b%BB'
set xtics 8
set grid
set key left top
plot $plot_cmd
set logscale y 10
set format y '%g'
plot $plot_cmd
unset multiplot
EOF
done

# --- Targets: np=2 if it was measured, else the smallest rank count.
read -r tnp _ <<< "$np_list"
[[ " $np_list " == *" 2 "* ]] && tnp=2
awk -F, -v np="$tnp" -v place="$place" -v label="$place_label" -v memcpy="$memcpy_gbps" '
  NR > 1 && $2 == np && $4 == place {
    bw[$1 "," $3] = $7; t[$1 "," $3] = $5
    if (!($3 in seen)) { seen[$3] = 1; if (small == "" || $3 + 0 < small + 0) small = $3 }
    if ($3 + 0 <= 67108864 && $3 + 0 > big + 0) big = $3
  }
  function ratio(a, b) { return (b > 0) ? sprintf("%.2f", a / b) : "n/a" }
  END {
    printf "## targets (np=%s, float sum, %s, busbw at %d B%s)\n", np, label, big, (big == 67108864) ? " = 64 MiB" : " (64 MiB not measured)"
    shm = bw["atoll_shm," big]; mpi = bw["mpi," big]; sock = bw["atoll_socket," big]; pool = bw["atoll_shm_pool," big]
    ring = bw["gloo_ring," big]; hd = bw["gloo_hd," big]; gloo = (ring > hd) ? ring : hd
    gname = (ring > hd) ? "gloo_ring" : "gloo_hd"
    printf "shm busbw / MPI busbw          : %.3f / %.3f GB/s = %s\n", shm, mpi, ratio(shm, mpi)
    printf "shm busbw / memcpy             : %.3f / %.3f GB/s = %s\n", shm, memcpy, ratio(shm, memcpy)
    printf "shm -R 1 (ncclMemAlloc) / MPI   : %.3f / %.3f GB/s = %s\n", pool, mpi, ratio(pool, mpi)
    printf "shm -R 1 (ncclMemAlloc) / memcpy: %.3f / %.3f GB/s = %s\n", pool, memcpy, ratio(pool, memcpy)
    printf "%d-byte time shm / MPI          : %.2f / %.2f us = %s\n", small, t["atoll_shm," small], t["mpi," small], ratio(t["atoll_shm," small], t["mpi," small])
    printf "socket busbw / best Gloo (%s) : %.3f / %.3f GB/s = %s\n", gname, sock, gloo, ratio(sock, gloo)
  }' "$out/results.csv" > "$out/targets.txt"

echo
echo "wrote $out/table.md, ratios.md, results.csv, rounds.csv, busbw_np*.png, mpi_config.txt"
echo
cat "$out/targets.txt"
