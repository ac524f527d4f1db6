# Google Benchmark suite for the schedule generators and the symbolic verifier, with a smoke run
# that only proves every benchmark family builds its schedules and verifies (seconds, not numbers).
if(ATOLL_BUILD_BENCH)
  find_package(benchmark REQUIRED)
  add_executable(bench_schedules ${CMAKE_CURRENT_LIST_DIR}/bench_schedules.cc)
  target_link_libraries(bench_schedules PRIVATE atoll_static benchmark::benchmark)
  add_test(NAME bench_schedules_smoke
    COMMAND $<TARGET_FILE:bench_schedules> --benchmark_min_time=0.001
            "--benchmark_filter=^(build/.*/ranks:(2|4096)/bytes:65536/|build_p2p/.*/ranks:(2|4096)$|verify/.*/ranks:8$)")
  # Google Benchmark exits 0 after a SkipWithError (a schedule the verifier rejects) or an empty filter.
  set_tests_properties(bench_schedules_smoke PROPERTIES TIMEOUT 30 LABELS "perf"
    FAIL_REGULAR_EXPRESSION "ERROR OCCURRED;Failed to match any benchmarks")
endif()
