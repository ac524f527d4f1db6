add_executable(test_call_check_tree ${CMAKE_CURRENT_LIST_DIR}/test_call_check_tree.cc)
target_include_directories(test_call_check_tree PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(test_call_check_tree PRIVATE atoll_static GTest::gtest_main Threads::Threads)
gtest_discover_tests(test_call_check_tree DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
