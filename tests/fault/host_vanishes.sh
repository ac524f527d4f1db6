#!/usr/bin/env bash
# A host that vanishes (its network gone, no FIN, no RST: power, cable, partition) must be reported
# by every survivor within 3 s with the default heartbeat (ATOLL_HEARTBEAT_MS, _TIMEOUT_MS). Three
# ranks on one emulated host (perf/islands/netns.sh), the victim on another; mid all-reduce the
# victim takes its host's eth0 down and freezes. Exit 77 (skipped) without root or iproute2.
#   host_vanishes.sh DEAD_PEER [LIMIT_MS]
set -euo pipefail
dead_peer=${1:?usage: host_vanishes.sh DEAD_PEER [LIMIT_MS]}
limit=${2:-3000}
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../../perf/islands/netns.sh"
netns_available || { echo "host_vanishes: needs root and iproute2 (ip netns); skipped"; exit 77; }
netns_up "atv$$" 2
ip netns exec "atv$$-h0" env NCCL_HOSTID=host0 NCCL_SOCKET_IFNAME==eth0 \
  "$dead_peer" --ranks 4 --victim 3 --vanish-netns "atv$$-h1" --limit-ms "$limit"
