# Google Benchmark suite for the host reduction kernels, and the bandwidth check script.
if(ATOLL_BUILD_BENCH)
  find_package(benchmark REQUIRED)
  add_executable(bench_kernels ${CMAKE_CURRENT_LIST_DIR}/bench_kernels.cc)
  target_link_libraries(bench_kernels PRIVATE atoll_static benchmark::benchmark)
endif()
