add_executable(test_scalable_init ${CMAKE_CURRENT_LIST_DIR}/test_scalable_init.cc)
target_include_directories(test_scalable_init PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(test_scalable_init PRIVATE atoll_static GTest::gtest_main Threads::Threads)
gtest_discover_tests(test_scalable_init DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)
