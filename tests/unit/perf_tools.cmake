# The perf tools' value encoding, verification patterns, layouts and option parsing.
add_executable(perf_tools_test ${CMAKE_CURRENT_LIST_DIR}/perf_tools_test.cc)
target_link_libraries(perf_tools_test PRIVATE atoll_perf_common GTest::gtest_main)
gtest_discover_tests(perf_tools_test DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60 LABELS unit)
