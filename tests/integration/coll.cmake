# Collective correctness driver (public API only) and its ctest matrix:
# ranks x {threads, procs} over shared memory, procs over sockets, and one ncclCommInitAll run.
add_executable(coll_check
  ${CMAKE_CURRENT_LIST_DIR}/coll_check.cc
  ${CMAKE_CURRENT_LIST_DIR}/coll_cases.cc)
target_include_directories(coll_check PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(coll_check PRIVATE atoll Threads::Threads)

# Full sweep where the 2 shared cores keep up; --quick (fewer counts and roots, same collectives,
# datatypes and ops) where 5 or 8 ranks oversubscribe them.
function(atoll_coll_test name timeout)
  add_test(NAME ${name} COMMAND coll_check ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} LABELS "integration;coll")
endfunction()

foreach(n 1 2 3 4 5 8)
  if(n GREATER 4)
    set(sweep --quick)
    set(limit 240)
  else()
    set(sweep)
    set(limit 180)
  endif()
  math(EXPR wd "${limit} - 20")
  atoll_coll_test(coll_threads_${n} ${limit} --threads ${n} ${sweep} --timeout ${wd})
  atoll_coll_test(coll_procs_${n} ${limit} --procs ${n} ${sweep} --timeout ${wd})
endforeach()

foreach(n 2 3 5 8)
  if(n GREATER 4)
    set(sweep --quick)
  else()
    set(sweep)
  endif()
  atoll_coll_test(coll_procs_socket_${n} 240 --procs ${n} ${sweep} --timeout 220)
  set_tests_properties(coll_procs_socket_${n} PROPERTIES ENVIRONMENT "NCCL_SHM_DISABLE=1"
                       LABELS "integration;coll;socket")
endforeach()

atoll_coll_test(coll_initall_4 180 --initall 4 --timeout 160)
