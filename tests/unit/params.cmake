# The parameter registry: configuration files, the environment, precedence and warnings.
add_executable(test_params ${CMAKE_CURRENT_LIST_DIR}/test_params.cc)
target_link_libraries(test_params PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_params DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 60)
