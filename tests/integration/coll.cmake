# Collective correctness driver (the public API, plus the per-call algorithm report that
# --expect-algo reads, hence the static library whose internal symbols it can see) and its ctest matrix:
# ranks x {threads, procs} over shared memory, procs over sockets, and one ncclCommInitAll run.
add_executable(coll_check
  ${CMAKE_CURRENT_LIST_DIR}/coll_check.cc
  ${CMAKE_CURRENT_LIST_DIR}/coll_cases.cc)
target_include_directories(coll_check PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(coll_check PRIVATE atoll_static Threads::Threads)

# The default sweep (every count, datatype, op; roots and big-count ops rotated) where the 2 shared
# cores keep up, --quick (6 counts) where 5 or 8 ranks oversubscribe them; `coll_check --full` by
# hand covers every combination. Measured on the 2-core dev box (loaded): about 2.5 minutes serial.
# The bootstrap timeout is lowered so a rendezvous that can never complete fails in seconds; the
# driver's own --timeout watchdog (below the ctest TIMEOUT) reports what was running on a hang.
# Sanitizer builds run the default sweeps --lean: its large counts are most of a sweep's time there
# (5-20x slower), and the release job runs them all.
function(atoll_coll_test name timeout)
  math(EXPR watchdog "${timeout} - 15")
  set(args ${ARGN})
  if(NOT ATOLL_SANITIZE STREQUAL "" AND NOT "--quick" IN_LIST args AND NOT "--full" IN_LIST args)
    list(APPEND args --lean)
  endif()
  add_test(NAME ${name} COMMAND coll_check ${args} --timeout ${watchdog})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} LABELS "integration;coll"
                       ENVIRONMENT "ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
endfunction()

foreach(n 1 2 3 4 5 8)
  set(sweep)
  if(n GREATER 4)
    set(sweep --quick)
  endif()
  atoll_coll_test(coll_threads_${n} 150 --threads ${n} ${sweep})
  atoll_coll_test(coll_procs_${n} 150 --procs ${n} ${sweep})
endforeach()

foreach(n 2 3 5 8)
  set(sweep)
  if(n GREATER 4)
    set(sweep --quick)
  endif()
  atoll_coll_test(coll_procs_socket_${n} 150 --procs ${n} ${sweep})
  set_tests_properties(coll_procs_socket_${n} PROPERTIES LABELS "integration;coll;socket"
                       ENVIRONMENT "NCCL_SHM_DISABLE=1;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
endforeach()

# Single copy on shm (transports/shm/shm_direct.h) from the first byte instead of 64 KiB, so every
# collective, type and count takes it: pointers between thread-ranks, ncclMemAlloc memory mapped
# between processes, process_vm_readv between processes.
foreach(cfg "threads_3_direct;--threads;3;ATOLL_SHM_DIRECT_MIN=8" "procs_3_nccl_mem;--procs;3,--nccl-mem;ATOLL_SHM_DIRECT_MIN=8"
            "procs_4_cma;--procs;4;ATOLL_SHM_CMA_MIN=8")
  list(GET cfg 0 name)
  list(GET cfg 1 mode)
  list(GET cfg 2 args)
  list(GET cfg 3 env)
  string(REPLACE "," ";" args "${args}")
  atoll_coll_test(coll_${name} 150 ${mode} ${args})
  set_tests_properties(coll_${name} PROPERTIES LABELS "integration;coll;shm"
                       ENVIRONMENT "${env};ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
endforeach()

atoll_coll_test(coll_initall_4 150 --initall 4)
# One thread drives all ranks, so a call that blocks instead of joining the group waits out the
# bootstrap timeout once per rank: keep that short (local ranks bootstrap in milliseconds).
set_tests_properties(coll_initall_4 PROPERTIES ENVIRONMENT "ATOLL_BOOTSTRAP_TIMEOUT_MS=5000")

# The whole sweep with ATOLL_CHECK=1: no false positives, for every collective, group and p2p shape.
atoll_coll_test(coll_procs_4_checked 150 --procs 4 --quick)
set_tests_properties(coll_procs_4_checked PROPERTIES ENVIRONMENT "ATOLL_CHECK=1;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
# One thread driving every rank: the fingerprint exchange of several communicators in one batch.
atoll_coll_test(coll_initall_4_checked 150 --initall 4 --quick)
set_tests_properties(coll_initall_4_checked PROPERTIES ENVIRONMENT "ATOLL_CHECK=1;ATOLL_BOOTSTRAP_TIMEOUT_MS=5000")

# Device buffers on the emulated GPU (ATOLL_DEVICE=emu, src/device/emu_device.h): every collective
# stages its buffers through host memory (core/device_staging.h), after a stream that fills the
# input late. A host path that touched device memory would crash; one that skipped the stream
# would read stale input.
foreach(cfg "threads_2;--threads;2" "procs_3;--procs;3" "initall_4;--initall;4,--quick")
  list(GET cfg 0 name)
  list(GET cfg 1 mode)
  list(GET cfg 2 args)
  string(REPLACE "," ";" args "${args}")
  atoll_coll_test(coll_device_emu_${name} 150 ${mode} ${args} --device)
  set_tests_properties(coll_device_emu_${name} PROPERTIES LABELS "integration;coll;device"
                       ENVIRONMENT "ATOLL_DEVICE=emu;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
endforeach()
# The same with every all-reduce, reduce-scatter, all-gather, broadcast and reduce of device memory
# reading its peers' buffers in place (core/device_intranode.h): through the emulator's IPC between
# processes, through plain pointers between the threads of one process, and with peer access
# between ranks of one process on different devices (ncclCommInitAll puts rank i on device i). A
# case that staged instead fails. The full sweep takes about a minute on the 2 cores; sanitizer builds run --quick.
set(direct_sweep)
if(ATOLL_SANITIZE)
  set(direct_sweep --quick)
endif()
foreach(cfg "threads_3;--threads;3" "procs_3;--procs;3" "initall_3;--initall;3")
  list(GET cfg 0 name)
  list(GET cfg 1 mode)
  list(GET cfg 2 args)
  atoll_coll_test(coll_device_emu_direct_${name} 150 ${mode} ${args} ${direct_sweep} --device
                  --colls allreduce,reducescatter,allgather,broadcast,bcast,reduce --expect-device-direct)
  set_tests_properties(coll_device_emu_direct_${name} PROPERTIES LABELS "integration;coll;device"
                       ENVIRONMENT "ATOLL_DEVICE=emu;ATOLL_DEVICE_IPC_MIN=1;ATOLL_BOOTSTRAP_TIMEOUT_MS=20000")
endforeach()
