# atoll-sim (issue 15): the simulator's parts, as a library its tests and the binary share.
add_library(atoll_sim STATIC ${CMAKE_CURRENT_LIST_DIR}/max_min.cc ${CMAKE_CURRENT_LIST_DIR}/network.cc
                             ${CMAKE_CURRENT_LIST_DIR}/programs.cc ${CMAKE_CURRENT_LIST_DIR}/executor.cc
                             ${CMAKE_CURRENT_LIST_DIR}/generate.cc ${CMAKE_CURRENT_LIST_DIR}/sweep.cc
                             ${CMAKE_CURRENT_LIST_DIR}/failure.cc)
target_link_libraries(atoll_sim PUBLIC atoll_static)
target_include_directories(atoll_sim PUBLIC ${PROJECT_SOURCE_DIR})
add_executable(atoll-sim ${CMAKE_CURRENT_LIST_DIR}/atoll_sim.cc ${PROJECT_SOURCE_DIR}/perf/common/options.cc
               ${PROJECT_SOURCE_DIR}/perf/common/values.cc)
target_link_libraries(atoll-sim PRIVATE atoll_sim)
target_include_directories(atoll-sim PRIVATE ${PROJECT_SOURCE_DIR}/include)
set_target_properties(atoll-sim PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
