add_test(NAME logging_debug_file_and_subsys
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/check_logging.sh $<TARGET_FILE:atollrun> $<TARGET_FILE:all_reduce_perf>)
set_tests_properties(logging_debug_file_and_subsys PROPERTIES TIMEOUT 60 LABELS integration)
