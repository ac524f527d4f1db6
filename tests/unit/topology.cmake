# topology/: graph and path classes, detection, XML, fabric files, islands, synthetic clusters.
add_executable(test_topology ${CMAKE_CURRENT_LIST_DIR}/test_topology.cc
               ${CMAKE_CURRENT_LIST_DIR}/test_topology_fixtures.cc ${CMAKE_CURRENT_LIST_DIR}/test_net_nodes.cc)
target_link_libraries(test_topology PRIVATE atoll_static GTest::gtest_main)
target_compile_definitions(test_topology PRIVATE ATOLL_TOPO_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/topology_fixtures")
gtest_discover_tests(test_topology DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 60 LABELS unit)

# atoll-info --topology end to end: detection, the path table, and islands under ATOLL_ISLAND_SIZE.
# Each runs through expect_status.sh, which holds it to an exit status and to lines of its output:
# WILL_FAIL would pass on any failure and PASS_REGULAR_EXPRESSION ignores the exit status.
set(ATOLL_TOPO_EXPECT ${PROJECT_SOURCE_DIR}/tests/integration/expect_status.sh)
function(atoll_info_topology_test name env)
  add_test(NAME ${name} COMMAND ${ATOLL_TOPO_EXPECT} ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 30 LABELS "integration;topology" ENVIRONMENT "${env}")
endfunction()
set(ATOLL_INFO $<TARGET_FILE:atoll-info>)

atoll_info_topology_test(atoll_info_topology "ATOLL_ISLAND_SIZE=3"
  -m "^Islands: 3 for 8 ranks \\(by ATOLL_ISLAND_SIZE\\)$" 0 ${ATOLL_INFO} --topology --nranks 8)
# A file that is not XML fails init with the parser's reason and the file's name.
atoll_info_topology_test(atoll_info_topology_bad_file "NCCL_TOPO_FILE=${CMAKE_CURRENT_LIST_DIR}/topology.cmake"
  -m "XML line 1 col 1: expected a root element" -m "in topology file .*/topology\\.cmake$"
  1 ${ATOLL_INFO} --topology)
# The same check on a file that is not there must fail: the exit status matches, the reason does not.
atoll_info_topology_test(atoll_info_topology_bad_file_other_reason
  "NCCL_TOPO_FILE=${CMAKE_CURRENT_LIST_DIR}/absent.xml"
  -m "expected output matching /XML line 1 col 1: expected a root element/"
  1 ${ATOLL_TOPO_EXPECT} -m "XML line 1 col 1: expected a root element" 1 ${ATOLL_INFO} --topology)
atoll_info_topology_test(atoll_info_topology_island_id "ATOLL_ISLAND_ID=4"
  -m "^Islands: 1 for 4 ranks \\(by ATOLL_ISLAND_ID\\)$" 0 ${ATOLL_INFO} --topology --nranks 4)
# Emulated islands on this host take the fabric file's island level as their inter-island cost, and
# the cost model prices the links between them with it.
atoll_info_topology_test(atoll_info_topology_fabric
  "ATOLL_ISLAND_SIZE=2;ATOLL_FABRIC_FILE=${CMAKE_CURRENT_LIST_DIR}/topology_fabric.txt"
  -m "^Islands: 2 for 4 ranks " -m "inter-island 25\\.00 GB/s 3\\.00 us"
  -m "^ +between islands +fabric +25\\.00 GB/s +3\\.00 us$" 0 ${ATOLL_INFO} --topology --nranks 4)
# An NCCL dump as Azure ships it (a <nic> with no busid under a <cpu>) is this node's topology.
atoll_info_topology_test(atoll_info_topology_nccl_dump
  "NCCL_TOPO_FILE=${CMAKE_CURRENT_LIST_DIR}/topology_fixtures/azure_ncv4_topo.xml"
  -m " 4 GPU\\(s\\), 1 NIC\\(s\\)$" -m "backend: file" -m "^ +nic eth0 \\(eth0\\) +\\[pci 24\\.0 GB/s\\] 100 Gb/s$"
  0 ${ATOLL_INFO} --topology --nranks 4)
