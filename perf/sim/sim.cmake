# atoll-sim (issue 15): the simulator's parts, as a library its tests and the binary share.
add_library(atoll_sim STATIC ${CMAKE_CURRENT_LIST_DIR}/max_min.cc ${CMAKE_CURRENT_LIST_DIR}/network.cc
                             ${CMAKE_CURRENT_LIST_DIR}/programs.cc ${CMAKE_CURRENT_LIST_DIR}/executor.cc)
target_link_libraries(atoll_sim PUBLIC atoll_static)
target_include_directories(atoll_sim PUBLIC ${PROJECT_SOURCE_DIR})
add_executable(sim_ring_scale ${CMAKE_CURRENT_LIST_DIR}/ring_scale.cc)
target_link_libraries(sim_ring_scale PRIVATE atoll_sim)
