# The CUDA backend's benchmark (device buffers against host buffers in one run) and its CPU smoke
# test on the emulated device; perf/gpu/check.sh runs it on a GPU.
add_executable(device_allreduce_bench ${CMAKE_CURRENT_LIST_DIR}/device_allreduce_bench.cc)
target_include_directories(device_allreduce_bench PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(device_allreduce_bench PRIVATE atoll_static Threads::Threads)
set_target_properties(device_allreduce_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/perf)
if(ATOLL_BUILD_TESTS)
  add_test(NAME perf_device_allreduce_emu
           COMMAND device_allreduce_bench --ranks 3 --min 4 --max 256K --iters 3 --warmup 1)
  set_tests_properties(perf_device_allreduce_emu PROPERTIES TIMEOUT 120 LABELS "perf;device"
                       ENVIRONMENT "ATOLL_DEVICE=emu")
endif()

# The device reduce kernel against the device's copy bandwidth (issue 16's >= 80 % target).
add_executable(device_kernel_bench ${CMAKE_CURRENT_LIST_DIR}/device_kernel_bench.cc)
target_include_directories(device_kernel_bench PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(device_kernel_bench PRIVATE atoll_static Threads::Threads)
set_target_properties(device_kernel_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/perf)
if(ATOLL_BUILD_TESTS)
  add_test(NAME perf_device_kernel_emu COMMAND device_kernel_bench --min 4K --max 1M --iters 3)
  set_tests_properties(perf_device_kernel_emu PROPERTIES TIMEOUT 120 LABELS "perf;device" ENVIRONMENT "ATOLL_DEVICE=emu")
endif()
