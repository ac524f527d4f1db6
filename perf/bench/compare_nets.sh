#!/usr/bin/env bash
# all_reduce_perf over several link kinds side by side, interleaved over rounds so the machine's
# noise hits all alike; prints a markdown table of median busbw per size for each, and each one's
# ratio to the first.
#   perf/bench/compare_nets.sh [BUILD_DIR (build)] [NP (2)] [ROUNDS (5)] [KINDS ("socket net-socket")]
# Kinds: shm (shared memory), socket (the built-in TCP transport), net-socket (the same TCP through
# the net transport and Atoll's Socket net plugin), ucx (the UCX net over UCX_TLS=tcp), ucx-shm
# (the UCX net over UCX's shared memory, ATOLL_UCX_PEER_FAILURE=0), mpi-ucx (Open MPI's
# MPI_Allreduce over its UCX pml with UCX_TLS=tcp, perf/baselines/mpi_allreduce_bench: the same
# fabric library under an MPI's own algorithms).
set -euo pipefail
build=${1:-build} np=${2:-2} rounds=${3:-5} kinds=${4:-"socket net-socket"}
for f in "$build/bin/atollrun" "$build/perf/all_reduce_perf"; do
  [ -e "$f" ] || { echo "$0: $f is missing (build first: tools/build.sh release)" >&2; exit 2; }
done
plugin=$(realpath "$build/libnccl-net-atoll.so")
envOf() {
  case $1 in
    shm) echo "NCCL_NET_PLUGIN=none" ;;
    socket) echo "NCCL_SHM_DISABLE=1 NCCL_NET_PLUGIN=none" ;;
    net-socket) echo "NCCL_SHM_DISABLE=1 NCCL_NET_PLUGIN=$plugin" ;;
    ucx) echo "NCCL_SHM_DISABLE=1 NCCL_NET=UCX UCX_TLS=tcp" ;;
    ucx-shm) echo "NCCL_SHM_DISABLE=1 NCCL_NET=UCX UCX_TLS=sm,self ATOLL_UCX_PEER_FAILURE=0" ;;
    mpi-ucx) ;;
    *) echo "$0: unknown kind $1" >&2; exit 2 ;;
  esac
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
args=(-b 8 -e 64M -f 8 -c 0 -n 20 -w 5)
runKind() {
  if [ "$1" = mpi-ucx ]; then
    [ -e "$build/perf/mpi_allreduce_bench" ] && command -v mpirun > /dev/null ||
      { echo "$0: mpi-ucx needs mpirun and $build/perf/mpi_allreduce_bench" >&2; exit 2; }
    mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ucx --mca pml_ucx_tls any \
      --mca pml_ucx_devices any --mca osc '^ucx' -x UCX_TLS=tcp,self \
      -x UCX_WARN_UNUSED_ENV_VARS=n -np "$np" "$build/perf/mpi_allreduce_bench" "${args[@]}"
  else
    # shellcheck disable=SC2046
    env $(envOf "$1") "$build/bin/atollrun" -np "$np" "$build/perf/all_reduce_perf" "${args[@]}"
  fi
}
for ((r = 0; r < rounds; r++)); do
  for kind in $kinds; do
    runKind "$kind" | awk -v s="$kind" '/^ +[0-9]/ { print s, $1, $6, $8 }'
  done
done > "$out"
python3 - "$out" "$np" "$kinds" <<'PY'
import statistics, sys
bw = {}
for line in open(sys.argv[1]):
    kind, size, us, busbw = line.split()
    bw.setdefault((kind, int(size)), []).append(float(busbw))
kinds = sys.argv[3].split()
sizes = sorted({s for _, s in bw})
print(f"all_reduce_perf, np={sys.argv[2]}, out of place, busbw GB/s, medians of {len(bw[(kinds[0], sizes[0])])} interleaved rounds")
print("| bytes | " + " | ".join(kinds) + " | " + " | ".join(f"{k}/{kinds[0]}" for k in kinds[1:]) + " |")
print("|---:|" + "---:|" * (2 * len(kinds) - 1))
for s in sizes:
    m = [statistics.median(bw[(k, s)]) for k in kinds]
    ratios = [f"{x / m[0]:.2f}" if m[0] > 0 else "-" for x in m[1:]]
    print(f"| {s} | " + " | ".join(f"{x:.2f}" for x in m) + " | " + " | ".join(ratios) + " |")
PY
