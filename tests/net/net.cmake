# The net plugin host (transports/net) against an in-tree plugin built for ABI v8, v10 and v11.
foreach(v 8 10 11)
  add_library(atoll_testnet_v${v} MODULE ${CMAKE_CURRENT_LIST_DIR}/test_net_plugin.cc)
  target_compile_definitions(atoll_testnet_v${v} PRIVATE ATOLL_TEST_NET_VERSION=${v})
  target_include_directories(atoll_testnet_v${v} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
  set_target_properties(atoll_testnet_v${v} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/netplugins)
endforeach()
# v11 under the name NCCL's bare-name rule looks for: NCCL_NET_PLUGIN=atolltest -> libnccl-net-atolltest.so.
set_target_properties(atoll_testnet_v11 PROPERTIES PREFIX "lib" OUTPUT_NAME "nccl-net-atolltest")

add_executable(test_net_host ${CMAKE_CURRENT_LIST_DIR}/test_net_host.cc)
target_link_libraries(test_net_host PRIVATE atoll_static GTest::gtest_main)
target_compile_definitions(test_net_host PRIVATE ATOLL_TESTNET_V8="$<TARGET_FILE:atoll_testnet_v8>"
                           ATOLL_TESTNET_V10="$<TARGET_FILE:atoll_testnet_v10>"
                           ATOLL_TESTNET_V11="$<TARGET_FILE:atoll_testnet_v11>")
add_dependencies(test_net_host atoll_testnet_v8 atoll_testnet_v10 atoll_testnet_v11)
gtest_discover_tests(test_net_host DISCOVERY_TIMEOUT 60
                     PROPERTIES LABELS unit TIMEOUT 60 ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_BINARY_DIR}/tests/netplugins")

# atoll-info --net lists what the search tried and the devices it found. It also opens our UCX
# plugin, whose memory hooks (libucm's madvise hook) crash TSan's thread-exit path: the UCX net
# registers no memory, so UCX_MEM_EVENTS=no loses nothing (as in the UCX tests).
add_test(NAME atoll_info_net COMMAND atoll-info --net)
set_tests_properties(atoll_info_net PROPERTIES LABELS unit
                     ENVIRONMENT "NCCL_NET_PLUGIN=none-such,$<TARGET_FILE:atoll_testnet_v10>;UCX_MEM_EVENTS=no"
                     PASS_REGULAR_EXPRESSION "AtollTest \\(ncclNetPlugin_v10\\), 2 device.*testnic1.*200 Gb/s")

# Atoll's own Socket net, as libnccl-net-atoll.so, through the same host.
add_executable(test_socket_net ${CMAKE_CURRENT_LIST_DIR}/test_socket_net.cc)
target_link_libraries(test_socket_net PRIVATE atoll_static GTest::gtest_main)
target_compile_definitions(test_socket_net PRIVATE ATOLL_NET_PLUGIN_PATH="$<TARGET_FILE:nccl_net_atoll>")
add_dependencies(test_socket_net nccl_net_atoll)
gtest_discover_tests(test_socket_net DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 120)
