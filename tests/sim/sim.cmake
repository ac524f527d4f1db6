# perf/sim: the simulator's rate model and network.
add_executable(test_max_min ${CMAKE_CURRENT_LIST_DIR}/test_max_min.cc)
target_link_libraries(test_max_min PRIVATE atoll_sim GTest::gtest_main)
gtest_discover_tests(test_max_min DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60 LABELS "unit;sim")
add_executable(test_sim_network ${CMAKE_CURRENT_LIST_DIR}/test_network.cc)
target_link_libraries(test_sim_network PRIVATE atoll_sim GTest::gtest_main)
gtest_discover_tests(test_sim_network DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60 LABELS "unit;sim")
