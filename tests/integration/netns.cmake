# Islands over emulated hosts (network namespaces, needs root; skipped otherwise). Serial: it
# creates namespaces and its shaped links should not compete with other tests for the cores.
if(ATOLL_SANITIZE STREQUAL "")
  add_test(NAME netns_islands COMMAND ${CMAKE_CURRENT_LIST_DIR}/netns_islands.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(netns_islands PROPERTIES TIMEOUT 240 LABELS "integration;netns" RUN_SERIAL TRUE
                       SKIP_RETURN_CODE 77)
endif()
