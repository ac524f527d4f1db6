add_executable(test_bootstrap ${CMAKE_CURRENT_LIST_DIR}/test_bootstrap.cc)
target_link_libraries(test_bootstrap PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_bootstrap DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60)
