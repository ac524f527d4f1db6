#!/usr/bin/env bash
# Plugin nets between emulated hosts (perf/islands/netns.sh: network namespaces joined by a bridge):
# 4 ranks on 2 hosts, shared memory inside a host, the net between hosts. Every collective checked
# (-c 1) over the UCX net (UCX's tcp on the hosts' eth0) and over Atoll's Socket net loaded as a
# plugin; the logs must show the links between hosts made by the net. Exit 77 (skipped) without
# root or iproute2.
#   netns_nets.sh BUILD_DIR HAVE_UCX(ON|OFF)
set -euo pipefail
build=${1:?usage: netns_nets.sh BUILD_DIR HAVE_UCX}
have_ucx=${2:-OFF}
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../../perf/islands/netns.sh"
netns_available || { echo "netns_nets: needs root and iproute2 (ip netns); skipped"; exit 77; }
out=$(mktemp -d)
cleanup() { netns_down; rm -rf "$out"; }
trap cleanup EXIT
fail() { echo "netns_nets: $*" >&2; for f in "$out"/*.log*; do echo "--- $f"; tail -15 "$f"; done; exit 1; }

# run NAME NET-LABEL TOOL [VAR=VALUE...] -- ARGS
run() {
  local name=$1 label=$2 tool=$3
  shift 3
  local envs=()
  while [[ "$1" != "--" ]]; do envs+=("$1"); shift; done
  shift
  netns_run 4 90 "$out/$name.log" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT "${envs[@]}" -- \
    "$build/perf/$tool" -n 2 -w 1 -c 1 "$@" || fail "$name failed"
  grep -q "# Out of bounds values : 0 OK" "$out/$name.log" || fail "$name: wrong results"
  [[ -z "${NETNS_NETS_SHOW:-}" ]] || grep -E "new links|^ +4194304" "$out/$name.log"
  grep -Eq "rank 0: [0-9]+ new links \([0-9]+ shm, [1-9][0-9]* net $label\)" "$out/$name.log" ||
    fail "$name: rank 0 made no link over net $label"
}

netns_up "atln$$" 2 1gbit
nets=("Socket|NCCL_NET_PLUGIN=$build/libnccl-net-atoll.so")
[[ $have_ucx == ON ]] && nets+=("UCX|NCCL_NET=UCX,UCX_TLS=tcp,UCX_NET_DEVICES=eth0")
for entry in "${nets[@]}"; do
  label=${entry%%|*}
  IFS=, read -r -a envs <<< "${entry#*|}"
  for tool in all_reduce all_gather reduce_scatter broadcast alltoall sendrecv; do
    run "$label-$tool" "$label" ${tool}_perf "${envs[@]}" -- -b 8 -e 4M -f 16
  done
done
echo "netns nets: ok (${#nets[@]} nets)"
