# The parameter registry: configuration files, the environment, precedence and warnings.
add_executable(test_params ${CMAKE_CURRENT_LIST_DIR}/test_params.cc)
target_link_libraries(test_params PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_params DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 60)

# Reloads (ncclResetDebugInit) racing readers: run under ATOLL_SANITIZE=thread or address to see it.
add_executable(test_params_reload ${CMAKE_CURRENT_LIST_DIR}/test_params_reload.cc)
target_link_libraries(test_params_reload PRIVATE atoll_static GTest::gtest_main Threads::Threads)
gtest_discover_tests(test_params_reload DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 120)
