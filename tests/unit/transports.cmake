# Transport unit tests: shm and socket streams, setup, fault handling (ranks as threads and forks).
add_executable(test_transports ${CMAKE_CURRENT_LIST_DIR}/test_transports.cc)
target_link_libraries(test_transports PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_transports DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
