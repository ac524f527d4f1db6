#!/usr/bin/env bash
# The CUDA backend's device check (issue 16), one call on a GPU machine: build with the CUDA
# backend; run the device tests, the elementwise kernels against the host kernels for every type
# and operation among them; benchmark the reduce kernel against the device's own copy; check every
# collective on device buffers with 1, 2 and 4 ranks sharing the GPU (threads and processes);
# run the *_perf tools on device buffers (all_reduce_perf with 1, 2 and 4 ranks, the others with
# 2); benchmark device against host buffers; and, where torch with CUDA is installed, run
# torch.distributed's NCCL backend on our libnccl.so.2.
#
#   perf/gpu/check.sh [OUTDIR]       (default: $OUT, else /tmp/atoll-gpu-check)
#
# Every step logs to OUTDIR/<step>.log; a summary line per step goes to OUTDIR/summary.txt.
# Exit status: 0 when every step that ran passed.
#
# Where the GPU machine cannot build (no compiler, CMake or GoogleTest there), build here with
# only libraries such a machine has, strip the debug info and carry the seven files (the device
# tool carries at most 8 paths and 64 MiB; stripped, they are about 15 MiB):
#   cmake -S . -B build-gpu -G Ninja -DATOLL_WITH_CUDA=ON -DATOLL_WITH_HWLOC=OFF -DATOLL_WITH_UCX=OFF \
#         -DATOLL_WITH_IBVERBS=OFF -DATOLL_BUILD_BENCH=OFF
#   ninja -C build-gpu test_device test_device_kernels test_device_ipc coll_check device_allreduce_bench \
#         device_kernel_bench nccl
#   strip --strip-debug build-gpu/tests/{test_device,test_device_kernels,test_device_ipc,coll_check} \
#         build-gpu/perf/{device_allreduce_bench,device_kernel_bench} build-gpu/libnccl.so.2.*.*
#   carry: build-gpu/tests/test_device build-gpu/tests/test_device_kernels build-gpu/tests/test_device_ipc
#          build-gpu/tests/coll_check
#          build-gpu/perf/device_allreduce_bench build-gpu/perf/device_kernel_bench build-gpu/libnccl.so.2.30.7
# The script skips the build when build-gpu/tests/coll_check exists (ATOLL_GPU_BUILD names another).
set -u
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-/tmp/atoll-gpu-check}}
mkdir -p "$out"
build=${ATOLL_GPU_BUILD:-build-gpu}
summary="$out/summary.txt"
: > "$summary"
status=0

step() {  # step NAME TIMEOUT COMMAND...: runs COMMAND, logs it, records PASS/FAIL and the time
  local name=$1 limit=$2
  shift 2
  local t0=$SECONDS
  if timeout "$limit" "$@" > "$out/$name.log" 2>&1; then
    echo "PASS $name ($((SECONDS - t0)) s)" | tee -a "$summary"
  else
    echo "FAIL $name ($((SECONDS - t0)) s, rc $?): see $name.log" | tee -a "$summary"
    tail -5 "$out/$name.log" | sed 's/^/    /' | tee -a "$summary"
    status=1
  fi
}

nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || echo "nvidia-smi failed" >> "$out/nvidia-smi.txt"
head -15 "$out/nvidia-smi.txt"

if [ ! -x "$build/tests/coll_check" ]; then
  step configure 300 cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATOLL_WITH_CUDA=ON \
    -DATOLL_BUILD_BENCH=OFF
  step build 600 ninja -C "$build" test_device test_device_kernels test_device_ipc coll_check \
    device_allreduce_bench device_kernel_bench nccl perf_tools atollrun
fi

export ATOLL_DEVICE=cuda
step test_device 120 "$build/tests/test_device"
step test_device_kernels 120 "$build/tests/test_device_kernels"
step test_device_ipc 120 "$build/tests/test_device_ipc"
# Reduce kernel against cuMemcpyAsync device-to-device; the target is ratio >= 0.80 at large sizes.
step kernel_bench 120 "$build/perf/device_kernel_bench" --min 1M --max 1G --iters 50
cat "$out/kernel_bench.log"
for n in 1 2 4; do
  step "coll_threads_$n" 300 "$build/tests/coll_check" --threads "$n" --device --quick --timeout 280
done
for n in 2 4; do
  step "coll_procs_$n" 300 "$build/tests/coll_check" --procs "$n" --device --quick --timeout 280
done
# Every all-reduce, reduce-scatter, all-gather, broadcast and reduce through the direct path
# (core/device_intranode.h), failing any case that stages instead: CUDA IPC between processes,
# pointers between threads; the run fails if the path did not run.
step coll_direct_procs_2 300 env ATOLL_DEVICE_IPC_MIN=1 "$build/tests/coll_check" --procs 2 --device --quick \
  --colls allreduce,reducescatter,allgather,broadcast,bcast,reduce --expect-device-direct --timeout 280
step coll_direct_threads_2 300 env ATOLL_DEVICE_IPC_MIN=1 "$build/tests/coll_check" --threads 2 --device --quick \
  --colls allreduce,reducescatter,allgather,broadcast,bcast,reduce --expect-device-direct --timeout 280
# nccl-tests' way: the *_perf tools on device buffers (-D 1), a stream per rank, ranks as
# processes sharing the GPU, every result checked (-c 1). Skipped where a carried build lacks them.
run_perf() {  # run_perf TOOL NP MAXBYTES
  [ -x "$build/perf/$1_perf" ] && [ -x "$build/bin/atollrun" ] || { echo "SKIP $1_perf (not built)" | tee -a "$summary"; return; }
  local extra=""
  case $1 in broadcast|reduce|gather|scatter) extra="-r 1" ;; esac
  step "$1_perf_np$2" 300 "$build/bin/atollrun" -np "$2" "$build/perf/$1_perf" -D 1 -b 8 -e "$3" -f 4 -n 10 -c 1 $extra
}
for n in 1 2 4; do
  run_perf all_reduce "$n" 256M
done
for tool in all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter; do
  run_perf "$tool" 2 64M
done
grep -v '^#  Rank' "$out/all_reduce_perf_np2.log" 2> /dev/null | tail -20
step bench_2 300 "$build/perf/device_allreduce_bench" --ranks 2 --min 1K --max 256M --iters 20
step bench_4 300 "$build/perf/device_allreduce_bench" --ranks 4 --min 1K --max 64M --iters 10
grep -v '^#' "$out/bench_2.log" > /dev/null 2>&1 && cat "$out/bench_2.log"

# torch.distributed with the NCCL backend, our library preloaded, two processes on the one GPU.
# The versioned file, since a carried build has no symlinks.
lib=$(ls "$PWD/$build"/libnccl.so.2.*.* 2> /dev/null | head -1)
if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2> /dev/null; then
  step torch_nccl_ours 300 env LD_PRELOAD="$lib" python3 perf/gpu/torch_nccl_check.py --nproc 2
  # NVIDIA's NCCL refuses two ranks on one GPU, so the comparison runs one rank per library.
  step torch_nccl_nvidia_1 300 python3 perf/gpu/torch_nccl_check.py --nproc 1
  step torch_nccl_ours_1 300 env LD_PRELOAD="$lib" python3 perf/gpu/torch_nccl_check.py --nproc 1
else
  echo "SKIP torch (no torch with CUDA here)" | tee -a "$summary"
fi
cat "$summary"
exit $status
