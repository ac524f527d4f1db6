#!/usr/bin/env bash
# Islands across emulated hosts (perf/islands/netns.sh): ranks in network namespaces joined by a
# shaped bridge, shared memory inside a host, TCP between hosts. Every all-reduce algorithm forced
# and the selector's own choice run with result checking (-c 1) on two hosts and on three uneven
# ones; the other collectives run forced hierarchical; a fabric file naming the emulated hosts
# decides the islands. Exit 77 (skipped) without root or iproute2.
set -euo pipefail
build=${1:?usage: netns_islands.sh BUILD_DIR}
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../../perf/islands/netns.sh"
netns_available || { echo "netns_islands: needs root and iproute2 (ip netns); skipped"; exit 77; }
out=$(mktemp -d)
tag="atl$$"
cleanup() { netns_down; rm -rf "$out"; }
trap cleanup EXIT

fail() { echo "netns_islands: $*" >&2; for f in "$out"/*.log*; do echo "--- $f"; tail -20 "$f"; done; exit 1; }

# run NAME NP TOOL [VAR=VALUE...] -- ARGS: one checked job; rank 0's log is $out/NAME.log.
run() {
  local name=$1 np=$2 tool=$3
  shift 3
  local envs=()
  while [[ "$1" != "--" ]]; do envs+=("$1"); shift; done
  shift
  netns_run "$np" 60 "$out/$name.log" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING "${envs[@]}" -- \
    "$build/perf/$tool" -n 2 -w 1 -c 1 "$@" || fail "$name failed"
  grep -q "# Out of bounds values : 0 OK" "$out/$name.log" || fail "$name: wrong results"
}

netns_up "$tag" 2 1gbit
for algo in ring tree rhd rd direct hierarchical auto; do
  env=()
  [[ $algo == auto ]] || env=("NCCL_ALGO=allreduce:$algo")
  run "ar-$algo" 4 all_reduce_perf "${env[@]}" -- -b 8 -e 1M -f 32
done
grep -q "2 island(s) by host rule, links inside islands shm, between socket" "$out/ar-auto.log" ||
  fail "two hosts were not two islands joined by sockets"
# Links are made on demand (core/connect.h): across the sizes rank 0 links over shm to its host's
# other rank and over sockets to the other host.
grep -Eq "rank 0: [0-9]+ new links \([1-9][0-9]* shm" "$out/ar-auto.log" || fail "rank 0 did not use shm inside its host"
grep -Eq "rank 0: [0-9]+ new links \([0-9]+ shm, [1-9][0-9]* socket\)" "$out/ar-auto.log" ||
  fail "rank 0 did not use sockets to the other host"
grep -Eq "hierarchical +[0-9.]+ us +<- chosen" "$out/ar-auto.log" || fail "the selector never chose hierarchical"
for tool in all_gather reduce_scatter broadcast reduce; do
  run "$tool-hier" 4 ${tool}_perf NCCL_ALGO=hierarchical -- -b 8 -e 256K -f 32 -r 1
done

# A fabric file that knows the emulated hosts by their NCCL_HOSTID puts each in its own island.
cat > "$out/fabric.txt" <<FABRIC
level leaf   bw=0.125 lat=30
level island bw=0.1 lat=40
leaf l0 island=pod0 hosts=host0
leaf l1 island=pod1 hosts=host1
FABRIC
run ar-fabric 4 all_reduce_perf "ATOLL_FABRIC_FILE=$out/fabric.txt" -- -b 8 -e 1M -f 32
grep -q "2 island(s) by ATOLL_FABRIC_FILE rule, links inside islands shm, between from the fabric file" \
  "$out/ar-fabric.log" || fail "the fabric file did not decide the islands"
netns_down

# Three hosts with 2+2+1 ranks: uneven islands.
netns_up "$tag" 3 1gbit
for algo in hierarchical auto; do
  env=()
  [[ $algo == auto ]] || env=("NCCL_ALGO=$algo")
  run "uneven-ar-$algo" 5 all_reduce_perf "${env[@]}" -- -b 8 -e 1M -f 32
  run "uneven-ag-$algo" 5 all_gather_perf "${env[@]}" -- -b 8 -e 256K -f 32
done
grep -q "3 island(s) by host rule" "$out/uneven-ar-auto.log" || fail "three hosts were not three islands"
echo "netns islands: ok"
