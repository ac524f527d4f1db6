# Google Benchmark suite for the host reduction kernels, and the bandwidth check built on it.
if(ATOLL_BUILD_BENCH)
  find_package(benchmark REQUIRED)
  add_executable(bench_kernels ${CMAKE_CURRENT_LIST_DIR}/bench_kernels.cc)
  target_link_libraries(bench_kernels PRIVATE atoll_static benchmark::benchmark)

  # The kernel bandwidth check (float sum against one-core memcpy, 64 MiB): a benchmark, so a
  # target to run by hand on a quiet machine, never a timed unit test:
  #   cmake --build build --target check_reduce_bandwidth
  set(check_bw ${CMAKE_CURRENT_LIST_DIR}/check_reduce_bandwidth.sh)
  add_custom_target(check_reduce_bandwidth COMMAND ${check_bw} $<TARGET_FILE:bench_kernels>
                    DEPENDS bench_kernels USES_TERMINAL VERBATIM)
  # Tests of the script, not of the speed: its usage errors, and that it parses bench_kernels'
  # real output (threshold 0, so any measured ratio passes; a changed output format fails).
  set(expect ${PROJECT_SOURCE_DIR}/tests/integration/expect_status.sh)
  add_test(NAME bench_check_bw_missing_binary COMMAND ${expect} -m "bench_kernels not found" 2 ${check_bw} /nonexistent)
  add_test(NAME bench_check_bw_bad_threshold
           COMMAND ${expect} -m "threshold must be a ratio" 2 ${check_bw} $<TARGET_FILE:bench_kernels> fast)
  add_test(NAME bench_check_bw_extra_argument
           COMMAND ${expect} -m "usage: check_reduce_bandwidth.sh" 2 ${check_bw} $<TARGET_FILE:bench_kernels> 0.8 extra)
  add_test(NAME bench_check_bw_parses COMMAND ${expect} -m "^ratio: [0-9.]+ \\(threshold 0.00\\) OK$" 0
                                              ${check_bw} $<TARGET_FILE:bench_kernels> 0)
  set_tests_properties(bench_check_bw_missing_binary bench_check_bw_bad_threshold bench_check_bw_extra_argument
                       bench_check_bw_parses PROPERTIES TIMEOUT 60 LABELS "perf")
  set_tests_properties(bench_check_bw_parses PROPERTIES ENVIRONMENT "ATOLL_BENCH_REPS=1")
endif()
