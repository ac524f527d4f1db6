# hypercube_perf: the all-gather by grouped send/recv over log2(n) dimensions, results checked, and
# its refusal of shapes the hypercube cannot run. Self-contained: perf.cmake's helpers are not
# relied on, since fragment order is only alphabetical.
set(ATOLL_HYPERCUBE_EXPECT ${CMAKE_CURRENT_LIST_DIR}/expect_status.sh)

function(atoll_hypercube_test name timeout)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} LABELS "integration;perf")
endfunction()

atoll_hypercube_test(perf_hypercube_np4 60
  $<TARGET_FILE:atollrun> -np 4 $<TARGET_FILE:hypercube_perf> -b 8 -e 1M -f 4 -c 1)
# Three dimensions, every datatype (the block offsets scale with the element size).
atoll_hypercube_test(perf_hypercube_t8_all_types 60
  $<TARGET_FILE:hypercube_perf> -t 8 -b 64 -e 64K -f 32 -n 2 -w 0 -d all -c 1)
atoll_hypercube_test(perf_hypercube_np4_socket 60
  $<TARGET_FILE:atollrun> -np 4 -x NCCL_SHM_DISABLE=1 $<TARGET_FILE:hypercube_perf> -b 8 -e 256K -f 8 -c 1)
# Exit status 2 (usage) with a message naming the problem, before any communicator exists.
atoll_hypercube_test(perf_hypercube_np3_rejected 20 sh -c
  "\"$0\" 2 \"$1\" -np 3 \"$2\" -b 8 -e 1K -c 1 2> \"$3\"\nstatus=$?\ncat \"$3\" >&2\nif [ $status -ne 0 ]\nthen exit $status\nfi\ngrep -q 'power-of-two number of ranks' \"$3\""
  ${ATOLL_HYPERCUBE_EXPECT} $<TARGET_FILE:atollrun> $<TARGET_FILE:hypercube_perf>
  ${CMAKE_CURRENT_BINARY_DIR}/perf_hypercube_np3.err)
atoll_hypercube_test(perf_hypercube_g2_rejected 20
  ${ATOLL_HYPERCUBE_EXPECT} 2 $<TARGET_FILE:hypercube_perf> -g 2 -b 8 -e 1K -c 1)
