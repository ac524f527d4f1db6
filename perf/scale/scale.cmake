# Per-rank cost at scale (init, one all-reduce, destroy): perf/scale/README.md. Links the static
# library because it reads each communicator's link table and bootstrap message count; world.cc
# is compiled in rather than linked from atoll_perf_common, which brings the shared library too.
add_executable(scale_bench ${CMAKE_CURRENT_LIST_DIR}/scale_bench.cc ${PROJECT_SOURCE_DIR}/perf/common/world.cc)
target_include_directories(scale_bench PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(scale_bench PRIVATE atoll_static Threads::Threads)
