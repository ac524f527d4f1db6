# Device layer: backend selection without a driver, the emulated GPU's memory and streams, and a
# failing device step on one thread-rank ending the collective on every rank with an error.
add_executable(test_device ${CMAKE_CURRENT_LIST_DIR}/test_device.cc)
target_link_libraries(test_device PRIVATE atoll_static GTest::gtest_main)
# One label each: gtest_discover_tests flattens a list value into separate property arguments.
gtest_discover_tests(test_device DISCOVERY_TIMEOUT 60 PROPERTIES LABELS device)

# atoll-info --device names the backend ATOLL_DEVICE selects and says why CUDA is or is not usable.
set(expect ${PROJECT_SOURCE_DIR}/tests/integration/expect_status.sh)
add_test(NAME atoll_info_device_emu COMMAND ${expect} -m "^device backend: emu$" 0 $<TARGET_FILE:atoll-info> --device)
add_test(NAME atoll_info_device_bad COMMAND ${expect} -m "is not a backend \\(valid: auto, host, cuda, emu\\)" 1
                                            $<TARGET_FILE:atoll-info> --device)
set_tests_properties(atoll_info_device_emu PROPERTIES TIMEOUT 30 LABELS "unit;device" ENVIRONMENT "ATOLL_DEVICE=emu")
set_tests_properties(atoll_info_device_bad PROPERTIES TIMEOUT 30 LABELS "unit;device" ENVIRONMENT "ATOLL_DEVICE=tpu")

# The CUDA elementwise kernels: their body on the host at every alignment, and launches through
# the emulated GPU (perf/gpu/check.sh runs the same binary with ATOLL_DEVICE=cuda on a GPU).
add_executable(test_device_kernels ${CMAKE_CURRENT_LIST_DIR}/test_device_kernels.cc)
target_link_libraries(test_device_kernels PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_device_kernels DISCOVERY_TIMEOUT 60 PROPERTIES ENVIRONMENT "ATOLL_DEVICE=emu" LABELS device)

# Device memory shared between processes: a fresh child process opens an exported handle.
add_executable(test_device_ipc ${CMAKE_CURRENT_LIST_DIR}/test_device_ipc.cc)
target_link_libraries(test_device_ipc PRIVATE atoll_static GTest::gtest_main)
gtest_discover_tests(test_device_ipc DISCOVERY_TIMEOUT 60 PROPERTIES ENVIRONMENT "ATOLL_DEVICE=emu" LABELS device)
