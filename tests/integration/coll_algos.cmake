# Every algorithm forced with NCCL_ALGO, run for real by the collective driver (every collective,
# type, op and in-place mode it sweeps) on islands emulated with ATOLL_ISLAND_SIZE: four ranks in
# islands of two over shared memory, and five in uneven islands (2+2+1) over sockets. Where the
# forced algorithm does not apply (rd on five ranks, tree for broadcast, binomial for all-reduce,
# bruck for anything but all-gather) the selector falls back to the ring, which the driver checks
# just the same.
foreach(algo ring tree rhd rd direct hierarchical binomial bruck)
  atoll_coll_test(coll_algo_${algo}_islands 150 --procs 4 --quick)
  set_tests_properties(coll_algo_${algo}_islands PROPERTIES LABELS "integration;coll;algo"
                       ENVIRONMENT "NCCL_ALGO=${algo};ATOLL_ISLAND_SIZE=2;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
  atoll_coll_test(coll_algo_${algo}_islands_socket 150 --procs 5 --quick)
  set_tests_properties(coll_algo_${algo}_islands_socket PROPERTIES LABELS "integration;coll;algo;socket"
                       ENVIRONMENT "NCCL_ALGO=${algo};ATOLL_ISLAND_SIZE=2;NCCL_SHM_DISABLE=1;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
endforeach()

# The log-depth algorithms on deeper trees, one island: seven ranks over shared memory (three
# levels, an uneven last one) and six over sockets, every root the driver rotates through.
set(logdepth "NCCL_ALGO=broadcast:binomial\;reduce:binomial\;allgather:bruck")
atoll_coll_test(coll_algo_logdepth_7 150 --procs 7 --quick)
set_tests_properties(coll_algo_logdepth_7 PROPERTIES LABELS "integration;coll;algo"
                     ENVIRONMENT "${logdepth};ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
atoll_coll_test(coll_algo_logdepth_6_socket 150 --procs 6 --quick)
set_tests_properties(coll_algo_logdepth_6_socket PROPERTIES LABELS "integration;coll;algo;socket"
                     ENVIRONMENT "${logdepth};NCCL_SHM_DISABLE=1;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
