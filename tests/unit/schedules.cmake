add_executable(test_schedules ${CMAKE_CURRENT_LIST_DIR}/test_schedules.cc)
target_link_libraries(test_schedules PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_schedules DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 300)

add_executable(test_schedules_rendezvous ${CMAKE_CURRENT_LIST_DIR}/test_schedules_rendezvous.cc)
target_link_libraries(test_schedules_rendezvous PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_schedules_rendezvous DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 300)
