# Every algorithm forced with NCCL_ALGO, run for real by the collective driver (every collective,
# type, op and in-place mode it sweeps) on islands emulated with ATOLL_ISLAND_SIZE: four ranks in
# islands of two over shared memory, and five in uneven islands (2+2+1) over sockets. Where the
# forced algorithm does not apply (rd on five ranks, tree for broadcast) the selector falls back to
# the ring, which the driver checks just the same.
foreach(algo ring tree rhd rd direct hierarchical)
  atoll_coll_test(coll_algo_${algo}_islands 150 --procs 4 --quick)
  set_tests_properties(coll_algo_${algo}_islands PROPERTIES LABELS "integration;coll;algo"
                       ENVIRONMENT "NCCL_ALGO=${algo};ATOLL_ISLAND_SIZE=2;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
  atoll_coll_test(coll_algo_${algo}_islands_socket 150 --procs 5 --quick)
  set_tests_properties(coll_algo_${algo}_islands_socket PROPERTIES LABELS "integration;coll;algo;socket"
                       ENVIRONMENT "NCCL_ALGO=${algo};ATOLL_ISLAND_SIZE=2;NCCL_SHM_DISABLE=1;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
endforeach()
