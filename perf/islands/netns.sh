# Emulated hosts for island tests and benchmarks, sourced by bash scripts: each host is a network
# namespace with one interface (eth0) on a bridge that lives in a switch namespace of its own, so
# nothing touches the real network. Ranks on one host share memory (same /dev/shm) and an
# NCCL_HOSTID; ranks on different hosts talk TCP through the bridge, whose ports can be shaped
# with tc to make the links between islands thin. Needs root and iproute2.
#
#   netns_up TAG NHOSTS [RATE [DELAY [PER_ISLAND CORE_RATE]]]
#                                       create hosts TAG-h0.. (10.213.0.1..), egress tbf RATE
#                                       (e.g. 1gbit) and netem DELAY (e.g. 100us, "" for none) on
#                                       each host; with PER_ISLAND > 0, a bridge per island of that
#                                       many hosts, the islands joined by a core bridge through
#                                       uplinks shaped to CORE_RATE each way
#   netns_run NP TIMEOUT_S OUTFILE VAR=VALUE... -- PROGRAM ARGS...
#                                       NP ranks spread evenly over the hosts (consecutive ranks
#                                       per host, NCCL_HOSTID=host<h> so a fabric file can name
#                                       them), torchrun-style environment; rank 0's output
#                                       to OUTFILE, the others' to OUTFILE.rN; fails if any fails
#   netns_down                          remove everything netns_up made (also on EXIT)

NETNS_TAG="" NETNS_HOSTS=0

netns_available() {
  [[ $(id -u) -eq 0 ]] && command -v ip > /dev/null && command -v tc > /dev/null &&
    ip netns add "atl-probe-$$" 2> /dev/null && ip netns del "atl-probe-$$"
}

netns_down() {
  [[ -n "$NETNS_TAG" ]] || return 0
  local h
  for ((h = 0; h < NETNS_HOSTS; h++)); do ip netns del "$NETNS_TAG-h$h" 2> /dev/null || true; done
  ip netns del "$NETNS_TAG-sw" 2> /dev/null || true
  NETNS_TAG=""
}

netns_up() {
  local tag=$1 n=$2 rate=${3:-} delay=${4:-} per=${5:-0} core=${6:-} h i
  NETNS_TAG=$tag NETNS_HOSTS=$n
  trap netns_down EXIT
  ip netns add "$tag-sw"
  local islands=1
  ((per > 0)) && islands=$(((n + per - 1) / per))
  for ((i = 0; i < islands; i++)); do
    ip -n "$tag-sw" link add "br$i" type bridge
    ip -n "$tag-sw" link set "br$i" up
  done
  if ((islands > 1)); then
    # Each island's uplink: a veth pair between its bridge and the core, each end's egress shaped,
    # so traffic between islands shares CORE_RATE each way, whatever the hosts' own links allow.
    ip -n "$tag-sw" link add core type bridge
    ip -n "$tag-sw" link set core up
    for ((i = 0; i < islands; i++)); do
      ip -n "$tag-sw" link add "up$i" type veth peer name "dn$i"
      ip -n "$tag-sw" link set "up$i" master "br$i" up
      ip -n "$tag-sw" link set "dn$i" master core up
      if [[ -n "$core" ]]; then
        ip netns exec "$tag-sw" tc qdisc add dev "up$i" root tbf rate "$core" burst 256kb latency 50ms
        ip netns exec "$tag-sw" tc qdisc add dev "dn$i" root tbf rate "$core" burst 256kb latency 50ms
      fi
    done
  fi
  for ((h = 0; h < n; h++)); do
    local ns="$tag-h$h" br=br0
    ((islands > 1)) && br="br$((h / per))"
    ip netns add "$ns"
    ip -n "$tag-sw" link add "p$h" type veth peer name eth0 netns "$ns"
    ip -n "$tag-sw" link set "p$h" master "$br" up
    ip -n "$ns" addr add "10.213.0.$((h + 1))/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    if [[ -n "$rate" && -n "$delay" ]]; then
      ip netns exec "$ns" tc qdisc add dev eth0 root handle 1: netem delay "$delay"
      ip netns exec "$ns" tc qdisc add dev eth0 parent 1: handle 2: tbf rate "$rate" burst 256kb latency 50ms
    elif [[ -n "$rate" ]]; then
      ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 50ms
    fi
  done
}

netns_run() {
  local np=$1 timeout_s=$2 outfile=$3
  shift 3
  local envs=()
  while [[ $# -gt 0 && "$1" != "--" ]]; do envs+=("$1"); shift; done
  [[ "${1:-}" == "--" ]] || { echo "netns_run: missing -- before the program" >&2; return 2; }
  shift
  local per=$(((np + NETNS_HOSTS - 1) / NETNS_HOSTS)) port=$((20000 + RANDOM % 20000)) r pids=() rc=0
  for ((r = 0; r < np; r++)); do
    local h=$((r / per)) out="$outfile"
    ((r == 0)) || out="$outfile.r$r"
    local hostRanks=$((np - h * per < per ? np - h * per : per))
    ip netns exec "$NETNS_TAG-h$h" env RANK=$r WORLD_SIZE="$np" LOCAL_RANK=$((r % per)) \
      LOCAL_WORLD_SIZE=$hostRanks MASTER_ADDR=10.213.0.1 MASTER_PORT=$port NCCL_HOSTID="host$h" \
      NCCL_SOCKET_IFNAME==eth0 "${envs[@]}" timeout -k 5 "$timeout_s" "$@" > "$out" 2>&1 &
    pids+=($!)
  done
  for r in "${!pids[@]}"; do
    wait "${pids[$r]}" || { local s=$?; ((rc != 0)) || rc=$s; echo "netns_run: rank $r exited $s" >&2; }
  done
  return $rc
}
