add_executable(test_schedules_hier ${CMAKE_CURRENT_LIST_DIR}/test_schedules_hier.cc)
target_link_libraries(test_schedules_hier PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_schedules_hier DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 300)
