add_executable(test_comm_lifecycle ${CMAKE_CURRENT_LIST_DIR}/test_comm_lifecycle.cc)
target_link_libraries(test_comm_lifecycle PRIVATE atoll GTest::gtest_main)
gtest_discover_tests(test_comm_lifecycle DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 120)

# Registrations belong to their communicator; the internal live count needs the static library.
add_executable(test_comm_register ${CMAKE_CURRENT_LIST_DIR}/test_comm_register.cc)
target_link_libraries(test_comm_register PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_comm_register DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 60)

# NCCL 2.30's additions (grow, suspend, windows, parameters, device API host side). The static
# library, for the LSA block rule that no public call can vary on one host.
add_executable(test_nccl230_api ${CMAKE_CURRENT_LIST_DIR}/test_nccl230_api.cc)
target_link_libraries(test_nccl230_api PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_nccl230_api DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 120)
