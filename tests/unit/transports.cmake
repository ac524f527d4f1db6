# Transport unit tests: shm and socket streams, setup, fault handling (ranks as threads and forks).
add_executable(test_transports ${CMAKE_CURRENT_LIST_DIR}/test_transports.cc)
target_link_libraries(test_transports PRIVATE atoll_static GTest::gtest_main)
# The Net kind runs the net transport over Atoll's Socket net, loaded as the plugin users would.
target_compile_definitions(test_transports PRIVATE ATOLL_NET_PLUGIN_PATH="$<TARGET_FILE:nccl_net_atoll>")
add_dependencies(test_transports nccl_net_atoll)
gtest_discover_tests(test_transports DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)

add_executable(test_shared_pool ${CMAKE_CURRENT_LIST_DIR}/test_shared_pool.cc)
target_link_libraries(test_shared_pool PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_shared_pool DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 60)
