# The plan cache's LRU order, eviction and counters, alone and through real calls (internal
# headers, so the static library).
add_executable(test_plan_cache ${CMAKE_CURRENT_LIST_DIR}/test_plan_cache.cc)
target_link_libraries(test_plan_cache PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_plan_cache DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 60)
