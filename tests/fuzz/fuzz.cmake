# libFuzzer targets (tests/fuzz/README.md): only in a Clang build configured with
# ATOLL_SANITIZE=fuzzer, which instruments the library for coverage, ASan and UBSan.
if(ATOLL_SANITIZE STREQUAL "fuzzer")
  foreach(target fuzz_wire fuzz_topology fuzz_params)
    add_executable(${target} ${CMAKE_CURRENT_LIST_DIR}/${target}.cc)
    target_link_libraries(${target} PRIVATE atoll_static)
    target_link_options(${target} PRIVATE -fsanitize=fuzzer)
  endforeach()
  add_custom_target(fuzz DEPENDS fuzz_wire fuzz_topology fuzz_params)
endif()
