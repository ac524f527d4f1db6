# atoll-calibrate: fits the selector's cost model to all_reduce_perf runs on this machine. It links
# the library's internals (the model it fits) and starts the public perf tool through atollrun.
add_executable(atoll-calibrate ${CMAKE_CURRENT_LIST_DIR}/calibrate.cc ${PROJECT_SOURCE_DIR}/perf/common/options.cc
               ${PROJECT_SOURCE_DIR}/perf/common/values.cc)
target_link_libraries(atoll-calibrate PRIVATE atoll_static)
target_include_directories(atoll-calibrate PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
set_target_properties(atoll-calibrate PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_dependencies(atoll-calibrate atollrun all_reduce_perf)

if(ATOLL_BUILD_TESTS AND ATOLL_SANITIZE STREQUAL "")
  # End to end on tiny settings: every algorithm runs over both links, the fit succeeds, and the
  # file it writes is read back through NCCL_CONF_FILE.
  add_test(NAME perf_calibrate_smoke
    COMMAND ${CMAKE_CURRENT_LIST_DIR}/smoke_calibrate.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(perf_calibrate_smoke PROPERTIES TIMEOUT 180 LABELS "perf" RUN_SERIAL TRUE)
endif()
