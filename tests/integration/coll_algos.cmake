# Every algorithm forced with NCCL_ALGO, run for real by the collective driver (every collective,
# type, op and in-place mode it sweeps) on islands emulated with ATOLL_ISLAND_SIZE: four ranks in
# islands of two over shared memory, and five in uneven islands (2+2+1) over sockets. Each call
# must also report the algorithm the test expects (--expect-algo): the forced one where it applies,
# the ring (the pipelined chain for broadcast and reduce) where it does not (rd on five ranks, tree,
# rhd and direct for anything but all-reduce, binomial for anything but broadcast and reduce, bruck
# for anything but all-gather), and direct for all-to-all, gather and scatter. A silent fallback
# fails the test even when its data are right.
set(expect_ring ring)
set(expect_tree ring,allreduce=tree)
set(expect_rhd ring,allreduce=rhd)
set(expect_rd_4 ring,allreduce=rd)
set(expect_rd_5 ring)
set(expect_direct ring,allreduce=direct)
set(expect_hierarchical hierarchical)
set(expect_binomial ring,broadcast=binomial,reduce=binomial)
set(expect_bruck ring,allgather=bruck)
foreach(algo ring tree rhd rd direct hierarchical binomial bruck)
  foreach(n 4 5)
    if(DEFINED expect_${algo}_${n})
      set(expect_${n} ${expect_${algo}_${n}})
    else()
      set(expect_${n} ${expect_${algo}})
    endif()
  endforeach()
  atoll_coll_test(coll_algo_${algo}_islands 150 --procs 4 --quick --expect-algo ${expect_4})
  set_tests_properties(coll_algo_${algo}_islands PROPERTIES LABELS "integration;coll;algo"
                       ENVIRONMENT "NCCL_ALGO=${algo};ATOLL_ISLAND_SIZE=2;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
  atoll_coll_test(coll_algo_${algo}_islands_socket 150 --procs 5 --quick --expect-algo ${expect_5})
  set_tests_properties(coll_algo_${algo}_islands_socket PROPERTIES LABELS "integration;coll;algo;socket"
                       ENVIRONMENT "NCCL_ALGO=${algo};ATOLL_ISLAND_SIZE=2;NCCL_SHM_DISABLE=1;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
endforeach()

# The log-depth algorithms on deeper trees, one island: seven ranks over shared memory (three
# levels, an uneven last one) and six over sockets, every root the driver rotates through.
# All-reduce, all-gather and reduce-scatter are left to the selector (not checked).
set(logdepth "NCCL_ALGO=broadcast:binomial\;reduce:binomial\;allgather:bruck")
set(expect_logdepth broadcast=binomial,reduce=binomial,allgather=bruck)
atoll_coll_test(coll_algo_logdepth_7 150 --procs 7 --quick --expect-algo ${expect_logdepth})
set_tests_properties(coll_algo_logdepth_7 PROPERTIES LABELS "integration;coll;algo"
                     ENVIRONMENT "${logdepth};ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
atoll_coll_test(coll_algo_logdepth_6_socket 150 --procs 6 --quick --expect-algo ${expect_logdepth})
set_tests_properties(coll_algo_logdepth_6_socket PROPERTIES LABELS "integration;coll;algo;socket"
                     ENVIRONMENT "${logdepth};NCCL_SHM_DISABLE=1;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")

# The check itself must be able to fail: expecting tree for an all-reduce that NCCL_ALGO forces
# to the ring fails the run (exit 1), naming what ran.
add_test(NAME coll_algo_expect_mismatch
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/expect_status.sh -m "ran ring .*expected tree" -m "[1-9][0-9]* failed"
                 1 $<TARGET_FILE:coll_check> --procs 2 --quick --colls allreduce --types float --ops sum
                 --expect-algo allreduce=tree --timeout 45)
set_tests_properties(coll_algo_expect_mismatch PROPERTIES TIMEOUT 60 LABELS "integration;coll;algo"
                     ENVIRONMENT "NCCL_ALGO=ring;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
# And an unknown collective in the expectation is a usage error, not a vacuous pass.
add_test(NAME coll_algo_expect_bad_spec
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/expect_status.sh -m "unknown collective in --expect-algo"
                 2 $<TARGET_FILE:coll_check> --procs 2 --expect-algo allreduse=ring)
set_tests_properties(coll_algo_expect_bad_spec PROPERTIES TIMEOUT 20 LABELS "integration;coll;algo")

# The ring all-reduce in rounds (ATOLL_RING_SLICE_BYTES) at a slice small enough that the driver's
# counts take many rounds, uneven ones included, over shared memory between three processes.
atoll_coll_test(coll_algo_ring_rounds_3 150 --procs 3 --colls allreduce --expect-algo allreduce=ring)
set_tests_properties(coll_algo_ring_rounds_3 PROPERTIES LABELS "integration;coll;algo"
                     ENVIRONMENT "NCCL_ALGO=ring;ATOLL_RING_SLICE_BYTES=100;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
