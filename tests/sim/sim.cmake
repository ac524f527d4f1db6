# perf/sim: the simulator's rate model, network, schedules and executor.
foreach(part max_min network programs executor generate sanity)
  set(target test_sim_${part})
  add_executable(${target} ${CMAKE_CURRENT_LIST_DIR}/test_${part}.cc)
  target_link_libraries(${target} PRIVATE atoll_sim GTest::gtest_main)
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60 LABELS "unit;sim")
endforeach()
