# Google Benchmark: host time per collective call for workloads that fit the plan cache or exceed
# it (cycling, random, a working set that changes), against building every call. A smoke run only
# proves each family runs; the numbers come from running the binary (perf/bench/bench_plan_cache.cc).
if(ATOLL_BUILD_BENCH)
  find_package(benchmark REQUIRED)
  add_executable(bench_plan_cache ${CMAKE_CURRENT_LIST_DIR}/bench_plan_cache.cc)
  target_link_libraries(bench_plan_cache PRIVATE atoll_static benchmark::benchmark)
  add_test(NAME bench_plan_cache_smoke
    COMMAND $<TARGET_FILE:bench_plan_cache> --benchmark_min_time=0.001 "--benchmark_filter=/ranks:1/")
  set_tests_properties(bench_plan_cache_smoke PROPERTIES TIMEOUT 60 LABELS "perf"
    FAIL_REGULAR_EXPRESSION "ERROR OCCURRED;Failed to match any benchmarks")
endif()
