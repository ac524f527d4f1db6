# Links on demand at 256 thread-ranks (shm), 64 over sockets, and the eager mode (NCCL_RUNTIME_CONNECT=0).
add_executable(links_on_demand ${CMAKE_CURRENT_LIST_DIR}/links_on_demand.cc)
target_include_directories(links_on_demand PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(links_on_demand PRIVATE atoll_static Threads::Threads)
foreach(cfg "shm_256;256" "socket_64;64;socket" "eager_shm_8;8;eager" "eager_socket_8;8;socket;eager")
  list(GET cfg 0 name)
  list(SUBLIST cfg 1 -1 args)
  add_test(NAME links_on_demand_${name} COMMAND links_on_demand ${args})
  set_tests_properties(links_on_demand_${name} PROPERTIES TIMEOUT 300 LABELS "integration"
                       ENVIRONMENT "ATOLL_BOOTSTRAP_TIMEOUT_MS=120000")
endforeach()
