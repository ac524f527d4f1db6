# Side-by-side all-reduce baselines: our benchmark programs for the peer libraries (Open MPI,
# Gloo; found by cmake/Backends.cmake), a memcpy yardstick, and run_baselines.sh that runs them
# next to all_reduce_perf. The peer programs share all_reduce_perf's options, timing, table and
# JSON (peer_sweep.cc reuses perf/common), so every column is in the same units.
add_executable(memcpy_bw ${CMAKE_CURRENT_LIST_DIR}/memcpy_bw.c)
set_target_properties(memcpy_bw PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/perf)
# The core-to-core round trip at the moment of each run (the VM's placement of its CPUs).
add_executable(core_rtt ${CMAKE_CURRENT_LIST_DIR}/core_rtt.c)
target_link_libraries(core_rtt PRIVATE Threads::Threads)
set_target_properties(core_rtt PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/perf)
# The lockstep loop of a small 2-rank collective with its software, without the library.
add_executable(lockstep ${CMAKE_CURRENT_LIST_DIR}/lockstep.c)
set_target_properties(lockstep PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/perf)

# Under sanitizers the peers' own leaks and races would fail the runs, and timings mean nothing.
if(ATOLL_SANITIZE STREQUAL "" AND (ATOLL_HAVE_MPI OR ATOLL_HAVE_GLOO))
  add_library(atoll_peer_sweep STATIC ${CMAKE_CURRENT_LIST_DIR}/peer_sweep.cc)
  target_link_libraries(atoll_peer_sweep PUBLIC atoll_perf_common)
endif()

set(ATOLL_BASELINE_PROGRAMS atollrun all_reduce_perf memcpy_bw core_rtt)
if(TARGET atoll_peer_sweep AND ATOLL_HAVE_MPI)
  add_executable(mpi_allreduce_bench ${CMAKE_CURRENT_LIST_DIR}/mpi_allreduce_bench.cc)
  target_link_libraries(mpi_allreduce_bench PRIVATE atoll_peer_sweep MPI::MPI_C)
  # C API only: mpi.h would otherwise pull in the deprecated C++ bindings (and their library).
  target_compile_definitions(mpi_allreduce_bench PRIVATE OMPI_SKIP_MPICXX MPICH_SKIP_MPICXX)
  set_target_properties(mpi_allreduce_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/perf)
  list(APPEND ATOLL_BASELINE_PROGRAMS mpi_allreduce_bench)
endif()
if(TARGET atoll_peer_sweep AND ATOLL_HAVE_GLOO)
  add_executable(gloo_allreduce_bench ${CMAKE_CURRENT_LIST_DIR}/gloo_allreduce_bench.cc)
  target_link_libraries(gloo_allreduce_bench PRIVATE atoll_peer_sweep gloo Threads::Threads)
  set_target_properties(gloo_allreduce_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/perf)
  list(APPEND ATOLL_BASELINE_PROGRAMS gloo_allreduce_bench)
endif()
# `ninja baselines` builds everything run_baselines.sh needs (some targets are defined by
# fragments included after this one, which add_dependencies allows).
add_custom_target(baselines)
add_dependencies(baselines ${ATOLL_BASELINE_PROGRAMS})

if(ATOLL_BUILD_TESTS AND ATOLL_HAVE_MPI AND ATOLL_SANITIZE STREQUAL "")
  # Our tools under Open MPI's launcher (perf/common/world.cc reads OMPI_COMM_WORLD_*). mpirun
  # refuses root without --allow-run-as-root; --oversubscribe lets 2 ranks start on a 1-core box.
  add_test(NAME perf_mpirun_all_reduce
    COMMAND ${MPIEXEC_EXECUTABLE} --allow-run-as-root --oversubscribe --bind-to none -np 2
            $<TARGET_FILE:all_reduce_perf> -b 8 -e 64K -f 8 -c 1)
  set_tests_properties(perf_mpirun_all_reduce PROPERTIES TIMEOUT 60 LABELS "perf" RUN_SERIAL TRUE)
endif()
if(ATOLL_BUILD_TESTS)
  # Both processes finish and the line comes out; a bad argument is refused.
  add_test(NAME perf_lockstep_smoke COMMAND lockstep 10 20000)
  set_tests_properties(perf_lockstep_smoke PROPERTIES TIMEOUT 30 LABELS "perf"
                       PASS_REGULAR_EXPRESSION "^lockstep_ns [0-9.]+ alone_ns [0-9.]+ work 10\n$")
  add_test(NAME perf_lockstep_bad_argument COMMAND lockstep 10 0)
  set_tests_properties(perf_lockstep_bad_argument PROPERTIES TIMEOUT 10 LABELS "perf" WILL_FAIL TRUE)
endif()
if(ATOLL_BUILD_TESTS AND TARGET mpi_allreduce_bench AND TARGET gloo_allreduce_bench)
  # Serial: Open MPI jobs started side by side on 2 cores can miss their startup deadlines.
  # The whole script end to end on tiny settings: every system runs and is checked (-c 1), and the
  # table, CSV, plot and targets come out.
  add_test(NAME perf_baselines_smoke
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/smoke_baselines.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(perf_baselines_smoke PROPERTIES TIMEOUT 180 LABELS "perf" RUN_SERIAL TRUE)
endif()
