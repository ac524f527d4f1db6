add_executable(test_fd_limit ${CMAKE_CURRENT_LIST_DIR}/test_fd_limit.cc)
target_include_directories(test_fd_limit PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(test_fd_limit PRIVATE atoll GTest::gtest_main)
gtest_discover_tests(test_fd_limit DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
