# Bulk copies (base/copy_bytes.h): both paths, every size class and placement.
add_executable(test_copy_bytes ${CMAKE_CURRENT_LIST_DIR}/test_copy_bytes.cc)
target_link_libraries(test_copy_bytes PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_copy_bytes DISCOVERY_TIMEOUT 60 PROPERTIES LABELS unit TIMEOUT 60)
