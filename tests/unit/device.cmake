# Device layer: backend selection without a driver, the emulated GPU's memory and streams, and a
# failing device step on one thread-rank ending the collective on every rank with an error.
add_executable(test_device ${CMAKE_CURRENT_LIST_DIR}/test_device.cc)
target_link_libraries(test_device PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_device DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "unit;device")

# atoll-info --device names the backend ATOLL_DEVICE selects and says why CUDA is or is not usable.
set(expect ${PROJECT_SOURCE_DIR}/tests/integration/expect_status.sh)
add_test(NAME atoll_info_device_emu COMMAND ${expect} -m "^device backend: emu$" 0 $<TARGET_FILE:atoll-info> --device)
add_test(NAME atoll_info_device_bad COMMAND ${expect} -m "is not a backend \\(valid: auto, host, cuda, emu\\)" 1
                                            $<TARGET_FILE:atoll-info> --device)
set_tests_properties(atoll_info_device_emu PROPERTIES TIMEOUT 30 LABELS "unit;device" ENVIRONMENT "ATOLL_DEVICE=emu")
set_tests_properties(atoll_info_device_bad PROPERTIES TIMEOUT 30 LABELS "unit;device" ENVIRONMENT "ATOLL_DEVICE=tpu")
