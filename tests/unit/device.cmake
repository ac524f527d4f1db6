# Device layer: backend selection without a driver, the emulated GPU's memory and streams, and a
# failing device step on one thread-rank ending the collective on every rank with an error.
add_executable(test_device ${CMAKE_CURRENT_LIST_DIR}/test_device.cc)
target_link_libraries(test_device PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_device DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "unit;device")
