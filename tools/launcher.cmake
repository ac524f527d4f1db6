# atollrun: local multi-process launcher (hosts the unique-id root, starts and supervises ranks).
add_executable(atollrun ${CMAKE_CURRENT_LIST_DIR}/atollrun/main.cc ${CMAKE_CURRENT_LIST_DIR}/atollrun/launcher.cc)
target_link_libraries(atollrun PRIVATE atoll_perf_common)
set_target_properties(atollrun PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
