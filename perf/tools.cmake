# nccl-tests-compatible *_perf tools: one shared driver, one tiny main per collective. Public API
# only, linked to libatoll.so, so the same sources also build against NVIDIA's libnccl.
add_library(atoll_perf_common STATIC
  ${CMAKE_CURRENT_LIST_DIR}/common/collectives.cc
  ${CMAKE_CURRENT_LIST_DIR}/common/device_buffers.cc
  ${CMAKE_CURRENT_LIST_DIR}/common/driver.cc
  ${CMAKE_CURRENT_LIST_DIR}/common/options.cc
  ${CMAKE_CURRENT_LIST_DIR}/common/report.cc
  ${CMAKE_CURRENT_LIST_DIR}/common/tally.cc
  ${CMAKE_CURRENT_LIST_DIR}/common/values.cc
  ${CMAKE_CURRENT_LIST_DIR}/common/world.cc)
target_include_directories(atoll_perf_common PUBLIC ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(atoll_perf_common PUBLIC atoll Threads::Threads ${CMAKE_DL_LIBS})

set(ATOLL_PERF_TOOLS all_reduce_perf all_gather_perf reduce_scatter_perf broadcast_perf reduce_perf alltoall_perf
    sendrecv_perf gather_perf scatter_perf hypercube_perf)
foreach(tool ${ATOLL_PERF_TOOLS})
  add_executable(${tool} ${CMAKE_CURRENT_LIST_DIR}/tools/${tool}.cc)
  target_link_libraries(${tool} PRIVATE atoll_perf_common)
  set_target_properties(${tool} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/perf)
endforeach()
add_custom_target(perf_tools DEPENDS ${ATOLL_PERF_TOOLS})
