#!/bin/sh
# usage: perf_launch_env.sh {master|mpi-file} PERF_TOOL [args...]
# Starts two ranks of a perf tool the way torchrun (RANK/WORLD_SIZE/MASTER_ADDR) or mpirun without
# MASTER_ADDR (OMPI_* plus a job id) would, and fails unless both ranks succeed.
mode=$1
shift
pids=""
for r in 0 1; do
  case $mode in
    master)
      # A port derived from the pid keeps concurrent test runs apart.
      RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + $$ % 20000)) "$@" > /dev/null &
      ;;
    mpi-file)
      OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=2 OMPI_MCA_ess_base_jobid="atoll-test-$$" "$@" > /dev/null &
      ;;
    *) echo "unknown mode $mode" >&2; exit 2 ;;
  esac
  pids="$pids $!"
done
status=0
for p in $pids; do
  wait "$p" || status=1
done
if [ -e "/tmp/atoll-perf-atoll_test_$$.id" ]; then
  echo "unique-id file was not removed" >&2
  status=1
fi
exit $status
