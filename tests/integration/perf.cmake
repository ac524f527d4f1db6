# Multi-process and multi-thread runs of the *_perf tools (with result checking) and of atollrun.
set(ATOLL_EXPECT ${CMAKE_CURRENT_LIST_DIR}/expect_status.sh)
set(ATOLL_RUN $<TARGET_FILE:atollrun>)

function(atoll_perf_test name timeout)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} LABELS "integration;perf")
endfunction()

atoll_perf_test(perf_all_reduce_np4 60 ${ATOLL_RUN} -np 4 $<TARGET_FILE:all_reduce_perf> -b 8 -e 1M -f 4 -c 1)
atoll_perf_test(perf_all_reduce_np4_socket 60
  ${ATOLL_RUN} -np 4 -x NCCL_SHM_DISABLE=1 $<TARGET_FILE:all_reduce_perf> -b 8 -e 1M -f 4 -c 1)
# -R 1: buffers from ncclMemAlloc, so from 64 KiB on shm links read them in place (single copy).
atoll_perf_test(perf_all_reduce_np3_nccl_mem 60 ${ATOLL_RUN} -np 3 $<TARGET_FILE:all_reduce_perf> -R 1 -b 8 -e 8M -f 8 -c 1)
atoll_perf_test(perf_all_gather_np3_nccl_mem 60 ${ATOLL_RUN} -np 3 $<TARGET_FILE:all_gather_perf> -R 1 -b 8 -e 8M -f 8 -c 1)
# Every datatype and op, including the exactness of half/bfloat16/fp8 sums across ranks.
atoll_perf_test(perf_all_reduce_all_types_np3 90
  ${ATOLL_RUN} -np 3 $<TARGET_FILE:all_reduce_perf> -b 8 -e 8K -f 32 -n 2 -w 0 -d all -o all -c 1)
atoll_perf_test(perf_reduce_scatter_all_types_np3 90
  ${ATOLL_RUN} -np 3 $<TARGET_FILE:reduce_scatter_perf> -b 24 -e 24K -f 32 -n 2 -w 0 -d all -o all -c 1)

foreach(tool all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter)
  set(extra "")
  if(tool MATCHES "^(broadcast|reduce|gather|scatter)$")
    list(APPEND extra -r 2)  # a non-zero root
  endif()
  atoll_perf_test(perf_${tool}_np3 60 ${ATOLL_RUN} -np 3 $<TARGET_FILE:${tool}_perf> -b 8 -e 256K -f 8 -c 1 ${extra})
endforeach()

# nccl-tests' in-place sendrecv sends from and receives into the same buffer; with 2 ranks both
# directions pair the same two buffers, which makes any read/write overlap show up every time.
atoll_perf_test(perf_sendrecv_inplace_np2 60 ${ATOLL_RUN} -np 2 $<TARGET_FILE:sendrecv_perf> -b 8 -e 256K -f 8 -c 1)

# Ranks as threads in one process: -t threads, -g ranks per thread (grouped calls).
atoll_perf_test(perf_all_reduce_t2_g2 60 $<TARGET_FILE:all_reduce_perf> -t 2 -g 2 -b 8 -e 256K -f 8 -c 1)
atoll_perf_test(perf_alltoall_t2_g2 60 $<TARGET_FILE:alltoall_perf> -t 2 -g 2 -b 8 -e 256K -f 8 -c 1)
atoll_perf_test(perf_broadcast_g3 60 $<TARGET_FILE:broadcast_perf> -g 3 -r 1 -b 8 -e 256K -f 8 -c 1 -m 2)

# -D 1: device buffers and a stream per rank, on the emulated GPU (the same runs on a GPU are in
# perf/gpu/check.sh). Threads cross the 1 MiB direct all-reduce (core/device_intranode.h);
# processes run every collective, -R 1 adds registration of the device buffers.
atoll_perf_test(perf_device_emu_all_reduce_t3 60
  env ATOLL_DEVICE=emu $<TARGET_FILE:all_reduce_perf> -D 1 -t 3 -b 8 -e 4M -f 8 -n 3 -c 1)
atoll_perf_test(perf_device_emu_all_reduce_np3_registered 60
  ${ATOLL_RUN} -np 3 -x ATOLL_DEVICE=emu $<TARGET_FILE:all_reduce_perf> -D 1 -R 1 -b 8 -e 4M -f 8 -n 3 -c 1)
foreach(tool all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter hypercube)
  set(extra "")
  set(np 3)
  if(tool MATCHES "^(broadcast|reduce|gather|scatter)$")
    list(APPEND extra -r 2)
  endif()
  if(tool STREQUAL "hypercube")
    set(np 4)  # a power of two
  endif()
  atoll_perf_test(perf_device_emu_${tool}_np${np} 60 ${ATOLL_RUN} -np ${np} -x ATOLL_DEVICE=emu
    $<TARGET_FILE:${tool}_perf> -D 1 -b 8 -e 256K -f 8 -n 3 -c 1 ${extra})
endforeach()
# The host backend has no streams: -D 1 is refused before any communicator exists.
atoll_perf_test(perf_device_on_host_refused 20 ${ATOLL_EXPECT} -m "-D 1: .*no streams" 2
  env ATOLL_DEVICE=host $<TARGET_FILE:all_reduce_perf> -D 1)

# Launch conventions other than atollrun.
atoll_perf_test(perf_env_master_addr 60
  ${CMAKE_CURRENT_LIST_DIR}/perf_launch_env.sh master $<TARGET_FILE:all_gather_perf> -b 8 -e 64K -f 8 -c 1)
atoll_perf_test(perf_env_mpi_id_file 60
  ${CMAKE_CURRENT_LIST_DIR}/perf_launch_env.sh mpi-file $<TARGET_FILE:all_reduce_perf> -b 8 -e 64K -f 8 -c 1)

# Command line errors exit 2 before touching the library.
atoll_perf_test(perf_bad_flag 20 ${ATOLL_EXPECT} 2 $<TARGET_FILE:all_reduce_perf> --bogus)
atoll_perf_test(perf_bad_size 20 ${ATOLL_EXPECT} 2 $<TARGET_FILE:all_reduce_perf> -b 1X)
atoll_perf_test(perf_bad_type 20 ${ATOLL_EXPECT} 2 $<TARGET_FILE:all_reduce_perf> -d float17)
atoll_perf_test(perf_bad_root 20 ${ATOLL_EXPECT} 2 $<TARGET_FILE:reduce_perf> -r 4 -t 2)
atoll_perf_test(perf_json_output 30 sh -c
  "rm -f \"$0\" && \"$1\" -b 8 -e 1K -f 4 -J \"$0\" > /dev/null && grep -q '\"results\"' \"$0\" && grep -q '\"wrong\": 0' \"$0\""
  ${CMAKE_CURRENT_BINARY_DIR}/perf_json_output.json $<TARGET_FILE:all_reduce_perf>)

# Wrong elements must reach the table through the tally (perf/common/tally.h), which sums them
# outside the library: a rank that spoils one output element per call must show exactly 1 in both
# columns of every row (4 rows: 8 in all) and fail with status 1. Across processes (TCP to process
# 0), with two clients per process, and within one process (in memory).
set(perf_row "^ +[0-9]+ +[0-9]+ +[a-z0-9]+ +[a-z]+ +-?[0-9]+")
set(perf_cols "( +[0-9.]+){3}")
set(perf_not_one " +([02-9]|[0-9]{2,}|N/A)")
set(perf_corrupt_expect ${ATOLL_EXPECT} -m "${perf_row}${perf_cols} +1${perf_cols} +1$"
  -x "${perf_row}${perf_cols}${perf_not_one}${perf_cols} +[^ ]+$" -x "${perf_row}${perf_cols} +[^ ]+${perf_cols}${perf_not_one}$"
  -m "Out of bounds values : 8 FAILED" 1)
set(perf_corrupt_sweep -b 8 -e 1K -f 4 -c 1)
atoll_perf_test(perf_corrupt_rank_np3 60 ${perf_corrupt_expect}
  ${ATOLL_RUN} -np 3 -x ATOLL_PERF_CORRUPT_RANK=2 $<TARGET_FILE:all_reduce_perf> ${perf_corrupt_sweep})
atoll_perf_test(perf_corrupt_rank_np2_t2 60 ${perf_corrupt_expect}
  ${ATOLL_RUN} -np 2 -x ATOLL_PERF_CORRUPT_RANK=3 $<TARGET_FILE:all_reduce_perf> -t 2 ${perf_corrupt_sweep})
atoll_perf_test(perf_corrupt_rank_t2_g2 60 ${perf_corrupt_expect}
  env ATOLL_PERF_CORRUPT_RANK=1 $<TARGET_FILE:all_reduce_perf> -t 2 -g 2 ${perf_corrupt_sweep})
# Process 0 finishing last by seconds (its JSON report blocks on a FIFO) must still write it all.
atoll_perf_test(perf_corrupt_rank_report_last 60 ${CMAKE_CURRENT_LIST_DIR}/perf_report_last.sh
  ${CMAKE_CURRENT_BINARY_DIR}/perf_report_last.fifo
  ${ATOLL_RUN} -np 3 -x ATOLL_PERF_CORRUPT_RANK=2 $<TARGET_FILE:all_reduce_perf> ${perf_corrupt_sweep})
atoll_perf_test(perf_corrupt_rank_out_of_range 20 ${ATOLL_EXPECT} -m "ATOLL_PERF_CORRUPT_RANK=4 is not a rank" 2
  env ATOLL_PERF_CORRUPT_RANK=4 $<TARGET_FILE:all_reduce_perf> -t 2 -g 2)

# atollrun: a failing rank's status comes back, the others are stopped instead of waited for.
# (Shell snippets separate commands with newlines: CMake would split arguments at semicolons.)
atoll_perf_test(atollrun_env 20 ${ATOLL_RUN} -np 3 -x ATOLL_TEST_VAR=x sh -c
  "test \"$ATOLL_TEST_VAR\" = x && test \"$WORLD_SIZE\" = 3 && test \"$LOCAL_RANK\" = \"$RANK\" && test \${#ATOLL_UNIQUE_ID} -eq 256")
atoll_perf_test(atollrun_false 20 ${ATOLL_EXPECT} 1 ${ATOLL_RUN} -np 2 false)
atoll_perf_test(atollrun_exit_code 20 ${ATOLL_EXPECT} 7 ${ATOLL_RUN} -np 3 sh -c
  "if [ \"$RANK\" = 1 ]\nthen exit 7\nfi\nsleep 60")
atoll_perf_test(atollrun_killed_rank 20 ${ATOLL_EXPECT} 137 ${ATOLL_RUN} -np 2 sh -c
  "if [ \"$RANK\" = 0 ]\nthen kill -9 $$\nfi\nsleep 60")
atoll_perf_test(atollrun_timeout 20 ${ATOLL_EXPECT} 124 ${ATOLL_RUN} --timeout 1 -np 2 sleep 60)
atoll_perf_test(atollrun_bad_usage 20 ${ATOLL_EXPECT} 2 ${ATOLL_RUN} -np 0 true)
# A perf rank killed mid-job (2 s in, after init): the survivors must fail on their own with the
# library's error, not be stopped by the launcher. They ignore atollrun's SIGTERM (SIG_IGN survives
# exec), so a survivor that hung would still be running when the 20 s grace ends and atollrun says
# it is killing it: that line, or a survivor without its AllReduce error, fails the test.
atoll_perf_test(atollrun_perf_rank_dies 60 ${ATOLL_EXPECT}
  -m "rank 0: AllReduce failed: remote process exited" -m "rank 1: AllReduce failed: remote process exited"
  -x "still running .* after SIGTERM"
  137 ${ATOLL_RUN} --grace 20 -np 3 sh -c
  "trap '' TERM\nif [ \"$RANK\" = 2 ]\nthen (sleep 2\nkill -9 $$) &\nfi\nexec \"$0\" -b 1M -e 1M -n 100000 -c 0"
  $<TARGET_FILE:all_reduce_perf>)
