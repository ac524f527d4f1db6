# topology/: graph and path classes, detection, XML, fabric files, islands, synthetic clusters.
add_executable(test_topology ${CMAKE_CURRENT_LIST_DIR}/test_topology.cc)
target_link_libraries(test_topology PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_topology DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60 LABELS unit)

# atoll-info --topology end to end: detection, the path table, and islands under ATOLL_ISLAND_SIZE.
add_test(NAME atoll_info_topology COMMAND atoll-info --topology --nranks 8)
set_tests_properties(atoll_info_topology PROPERTIES TIMEOUT 30 LABELS "integration;topology"
                     ENVIRONMENT "ATOLL_ISLAND_SIZE=3"
                     PASS_REGULAR_EXPRESSION "Islands: 3 for 8 ranks \\(by ATOLL_ISLAND_SIZE\\)")
add_test(NAME atoll_info_topology_bad_file COMMAND atoll-info --topology)
set_tests_properties(atoll_info_topology_bad_file PROPERTIES TIMEOUT 30 LABELS "integration;topology"
                     ENVIRONMENT "NCCL_TOPO_FILE=${CMAKE_CURRENT_LIST_DIR}/topology.cmake" WILL_FAIL TRUE)
add_test(NAME atoll_info_topology_island_id COMMAND atoll-info --topology --nranks 4)
set_tests_properties(atoll_info_topology_island_id PROPERTIES TIMEOUT 30 LABELS "integration;topology"
                     ENVIRONMENT "ATOLL_ISLAND_ID=4"
                     PASS_REGULAR_EXPRESSION "Islands: 1 for 4 ranks \\(by ATOLL_ISLAND_ID\\)")
# Emulated islands on this host take the fabric file's island level as their inter-island cost, and
# the cost model prices the links between them with it.
add_test(NAME atoll_info_topology_fabric COMMAND atoll-info --topology --nranks 4)
set_tests_properties(atoll_info_topology_fabric PROPERTIES TIMEOUT 30 LABELS "integration;topology"
                     ENVIRONMENT "ATOLL_ISLAND_SIZE=2;ATOLL_FABRIC_FILE=${CMAKE_CURRENT_LIST_DIR}/topology_fabric.txt"
                     PASS_REGULAR_EXPRESSION "Islands: 2 for 4 ranks.*inter-island 25.00 GB/s 3.00 us.*between islands +fabric +25.00 GB/s +3.00 us")
