# atoll-info: parameter registry dump and the generator of docs/ENV.md.
add_executable(atoll-info ${CMAKE_CURRENT_LIST_DIR}/atoll_info/atoll_info.cc)
target_link_libraries(atoll-info PRIVATE atoll_static)
target_include_directories(atoll-info PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_definitions(atoll-info PRIVATE ATOLL_VERSION_STRING="${PROJECT_VERSION}")
set_target_properties(atoll-info PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
add_custom_target(update_env_doc
  COMMAND sh -c "\"$1\" --params --markdown > \"$2\"" atoll-info $<TARGET_FILE:atoll-info>
          ${PROJECT_SOURCE_DIR}/docs/ENV.md
  DEPENDS atoll-info VERBATIM
  COMMENT "Regenerating docs/ENV.md")
