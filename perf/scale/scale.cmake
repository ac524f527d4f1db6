# Per-rank cost at scale (init, one all-reduce, destroy): perf/scale/README.md. Links the static
# library because it reads each communicator's link table and bootstrap message count; world.cc
# is compiled in rather than linked from atoll_perf_common, which brings the shared library too.
add_executable(scale_bench ${CMAKE_CURRENT_LIST_DIR}/scale_bench.cc ${PROJECT_SOURCE_DIR}/perf/common/world.cc)
target_include_directories(scale_bench PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(scale_bench PRIVATE atoll_static Threads::Threads)
# 1024 ranks joining one root at once (threads; no all-reduce): the root's admission limit may
# delay a rank but never fail it. Skipped by the sanitizer jobs (tools/run-tests.sh), where 1024
# instrumented threads take minutes and exercise nothing the smaller cases do not.
add_test(NAME scale_join_1024_threads COMMAND scale_bench --threads 1024 --bytes 0)
set_tests_properties(scale_join_1024_threads PROPERTIES TIMEOUT 300 LABELS "perf;scale")
