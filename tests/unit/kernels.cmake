# Host reduction kernels: every dtype x op, conversions, scale/divide, both SIMD variants.
add_executable(test_kernels ${CMAKE_CURRENT_LIST_DIR}/test_kernels.cc ${CMAKE_CURRENT_LIST_DIR}/test_kernels_conversions.cc)
target_link_libraries(test_kernels PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_kernels DISCOVERY_TIMEOUT 60)
