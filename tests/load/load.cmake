# Soak: 8 real ranks, 20 000 random checked collectives, resources flat (tests/load/soak.cc).
# Sanitizer builds run a tenth of it (same code paths, 5-20x slower per op).
add_executable(soak ${CMAKE_CURRENT_LIST_DIR}/soak.cc)
target_link_libraries(soak PRIVATE atoll)
target_include_directories(soak PRIVATE ${PROJECT_SOURCE_DIR})
set(ATOLL_SOAK_OPS 20000)
if(ATOLL_SANITIZE)
  set(ATOLL_SOAK_OPS 2000)
endif()
add_test(NAME load_soak_shm COMMAND soak --ranks 8 --ops ${ATOLL_SOAK_OPS} --max-bytes 65536 --seed 1)
add_test(NAME load_soak_socket COMMAND soak --ranks 8 --ops ${ATOLL_SOAK_OPS} --max-bytes 65536 --seed 2)
set_tests_properties(load_soak_shm load_soak_socket PROPERTIES TIMEOUT 600 LABELS "fault;soak" RUN_SERIAL TRUE)
set_tests_properties(load_soak_socket PROPERTIES ENVIRONMENT "NCCL_SHM_DISABLE=1")
