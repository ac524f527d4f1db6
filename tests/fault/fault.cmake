# Fault injection with real processes: a rank killed mid-collective must become an error on every
# survivor within 2 s of the kill (the README's bound), however the ranks were started.
add_executable(dead_peer ${CMAKE_CURRENT_LIST_DIR}/dead_peer.cc)
target_link_libraries(dead_peer PRIVATE atoll atoll_perf_common)
target_include_directories(dead_peer PRIVATE ${PROJECT_SOURCE_DIR})
# Sanitizers slow every poll 5-20x; the bound then only checks "bounded", not the 2 s target.
set(ATOLL_FAULT_LIMIT_MS 2000)
if(ATOLL_SANITIZE)
  set(ATOLL_FAULT_LIMIT_MS 30000)
endif()
# Killed (SIGKILL) over shm and sockets at 4 and 8 ranks; frozen (SIGSTOP, alive but silent) with a
# 1 s ATOLL_TIMEOUT_MS, where only the no-progress deadline can end the survivors' wait (and most
# survivors wait on a rank that is itself waiting, so naming the victim takes the wait-for chain);
# killed and then recovered from (shrink without the victim, checked all-reduce).
foreach(cfg "shm_4;4;1;;" "shm_8;8;5;;" "socket_4;4;2;NCCL_SHM_DISABLE=1;" "socket_8;8;6;NCCL_SHM_DISABLE=1;"
            "stopped_shm_4;4;2;ATOLL_TIMEOUT_MS=1000;--stop" "stopped_socket_4;4;1;NCCL_SHM_DISABLE=1,ATOLL_TIMEOUT_MS=1000;--stop"
            "stopped_shm_8;8;5;ATOLL_TIMEOUT_MS=1000;--stop" "stopped_socket_8;8;3;NCCL_SHM_DISABLE=1,ATOLL_TIMEOUT_MS=1000;--stop"
            "shrink_shm_8;8;3;;--shrink" "shrink_socket_4;4;0;NCCL_SHM_DISABLE=1;--shrink"
            # Single copy (transports/shm/shm_direct.h): peers read the victim's ncclMemAlloc pages
            # in place, or its memory through process_vm_readv, while it dies or freezes.
            "nccl_mem_shm_4;4;1;;--nccl-mem" "stopped_nccl_mem_shm_4;4;2;ATOLL_TIMEOUT_MS=1000;--stop,--nccl-mem"
            "shrink_nccl_mem_shm_4;4;3;;--shrink,--nccl-mem" "cma_shm_4;4;2;ATOLL_SHM_CMA_MIN=65536;")
  list(GET cfg 0 name)
  list(GET cfg 1 ranks)
  list(GET cfg 2 victim)
  list(GET cfg 3 env)
  list(GET cfg 4 mode)
  string(REPLACE "," ";" env "${env}")
  string(REPLACE "," ";" mode "${mode}")
  set(limit ${ATOLL_FAULT_LIMIT_MS})
  if("--stop" IN_LIST mode)
    math(EXPR limit "${limit} + 1000")  # ATOLL_TIMEOUT_MS first, then the bound
  endif()
  add_test(NAME fault_dead_peer_${name} COMMAND dead_peer --ranks ${ranks} --victim ${victim} --limit-ms ${limit} ${mode})
  set_tests_properties(fault_dead_peer_${name} PROPERTIES TIMEOUT 150 LABELS "fault" RUN_SERIAL TRUE)
  if(env)
    set_tests_properties(fault_dead_peer_${name} PROPERTIES ENVIRONMENT "${env}")
  endif()
endforeach()

# Launch styles: a parent that reaps late (the victim, the last rank, is a zombie while the
# survivors wait), ranks in pid namespaces of their own sharing /dev/shm (every rank is pid 2 in
# its namespace), a victim whose forked child outlives it, atollrun, Open MPI's mpirun, and torchrun-style variables with NCCL_COMM_ID.
foreach(cfg "reap_late_shm_4;--reap-late;" "reap_late_socket_4;--reap-late;NCCL_SHM_DISABLE=1"
            "pidns_shm_4;--pidns;" "pidns_reap_late_shm_4;--pidns,--reap-late;"
            "pidns_nccl_mem_cma_shm_4;--pidns,--nccl-mem;ATOLL_SHM_CMA_MIN=65536" "forked_worker_shm_4;--victim-forks;"
            "atollrun_4;--launch,atollrun,--atollrun,$<TARGET_FILE:atollrun>;" "mpirun_4;--launch,mpirun;"
            "torchrun_env_4;--launch,env;")
  list(GET cfg 0 name)
  list(GET cfg 1 mode)
  list(GET cfg 2 env)
  string(REPLACE "," ";" mode "${mode}")
  add_test(NAME fault_dead_peer_${name} COMMAND dead_peer --ranks 4 --victim 3 --limit-ms ${ATOLL_FAULT_LIMIT_MS} ${mode})
  set_tests_properties(fault_dead_peer_${name} PROPERTIES TIMEOUT 150 LABELS "fault" RUN_SERIAL TRUE)
  if(env)
    set_tests_properties(fault_dead_peer_${name} PROPERTIES ENVIRONMENT "${env}")
  endif()
endforeach()

# Dead hosts and busy ranks (socket heartbeats: TCP keepalive with TCP_USER_TIMEOUT). A host whose
# network disappears is reported within 3 s by default (emulated hosts, needs root); a rank that
# sleeps 6 s before a call, three heartbeat timeouts, while its peers wait in that call with their
# data sent, is never declared dead.
if(ATOLL_SANITIZE STREQUAL "")
  add_test(NAME fault_host_vanishes COMMAND ${CMAKE_CURRENT_LIST_DIR}/host_vanishes.sh $<TARGET_FILE:dead_peer> 3000)
  set_tests_properties(fault_host_vanishes PROPERTIES TIMEOUT 150 LABELS "fault;netns" RUN_SERIAL TRUE
                       SKIP_RETURN_CODE 77)
endif()
add_test(NAME fault_slow_rank_socket_4 COMMAND dead_peer --ranks 4 --victim 2 --slow-ms 6000)
set_tests_properties(fault_slow_rank_socket_4 PROPERTIES TIMEOUT 150 LABELS "fault" RUN_SERIAL TRUE
                     ENVIRONMENT "NCCL_SHM_DISABLE=1")

# ATOLL_CHECK: mismatched calls become ncclInvalidUsage on every rank involved (same message), the
# communicator stays usable, and correct calls raise nothing.
add_executable(call_mismatch ${CMAKE_CURRENT_LIST_DIR}/call_mismatch.cc)
target_link_libraries(call_mismatch PRIVATE atoll)
target_include_directories(call_mismatch PRIVATE ${PROJECT_SOURCE_DIR})
foreach(c count dtype op root coll p2p mixed init none)
  add_test(NAME fault_call_mismatch_${c} COMMAND call_mismatch --case ${c} --ranks 4)
  set_tests_properties(fault_call_mismatch_${c} PROPERTIES TIMEOUT 90 LABELS "fault")
endforeach()

# Hostile clients against the root, the ranks' bootstrap listeners and their data listeners while
# a job runs over TCP: the job must finish correctly and every kind of listener must log rejections.
add_executable(hostile_listeners ${CMAKE_CURRENT_LIST_DIR}/hostile_listeners.cc)
target_link_libraries(hostile_listeners PRIVATE atoll_static Threads::Threads)
target_include_directories(hostile_listeners PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/src)
add_test(NAME fault_hostile_listeners COMMAND hostile_listeners --ranks 4 --rounds 30)
set_tests_properties(fault_hostile_listeners PROPERTIES TIMEOUT 150 LABELS "fault;security" RUN_SERIAL TRUE)
# At 8 ranks the collective ranks wait on the odd one at different points of their exchange.
add_test(NAME fault_call_mismatch_mixed_8ranks COMMAND call_mismatch --case mixed --ranks 8)
set_tests_properties(fault_call_mismatch_mixed_8ranks PROPERTIES TIMEOUT 90 LABELS "fault")
# The bound is enforced: an impossible one (-1 ms) fails the run, naming it.
add_test(NAME fault_call_mismatch_bound_enforced
         COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/expect_status.sh -m "over the -1 ms bound" 1
                 $<TARGET_FILE:call_mismatch> --case mixed --ranks 4 --bound-ms -1)
set_tests_properties(fault_call_mismatch_bound_enforced PROPERTIES TIMEOUT 90 LABELS "fault")
