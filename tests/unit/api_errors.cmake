# Bad-input behaviour of the public API, through the shared library only.
add_executable(test_api_errors ${CMAKE_CURRENT_LIST_DIR}/test_api_errors.cc ${CMAKE_CURRENT_LIST_DIR}/api_errors_c.c)
target_link_libraries(test_api_errors PRIVATE atoll GTest::gtest_main Threads::Threads)
gtest_discover_tests(test_api_errors DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60 LABELS api)
