# The layers link only downward (top-level CMakeLists.txt, atoll_layer): each sees the include
# roots of the layers below it and nothing else, so an upward include fails to compile. These
# tests prove it with the compiler and each layer's own include directories: every probe of a
# header above (or beside) a layer must fail with "No such file", and every layer's own headers
# and those below it must compile, so a failure is the layering and not a broken command.
set(layer_forbidden_base core/comm.h transports/transport.h topology/islands.h bootstrap/bootstrap.h)
set(layer_forbidden_kernels algorithms/schedule.h core/comm.h)
set(layer_forbidden_topology algorithms/schedule.h core/comm.h transports/transport.h)
set(layer_forbidden_algorithms tuning/selector.h engine/plan.h transports/transport.h core/comm.h)
set(layer_forbidden_transports core/comm.h engine/plan.h bootstrap/bootstrap.h topology/islands.h)
set(layer_forbidden_device core/comm.h engine/plan.h)
set(layer_forbidden_bootstrap core/comm.h transports/transport.h topology/islands.h)
set(layer_forbidden_tuning core/comm.h engine/plan.h transports/transport.h)
set(layer_forbidden_engine core/comm.h tuning/selector.h bootstrap/bootstrap.h)
set(layer_allowed_base base/status.h base/params.h base/socket.h base/hmac.h)
set(layer_allowed_kernels kernels/host/reduce.h base/status.h)
set(layer_allowed_topology topology/islands.h topology/island_map.h base/status.h)
set(layer_allowed_algorithms algorithms/schedule.h topology/island_map.h)
set(layer_allowed_transports transports/transport.h base/socket.h)
set(layer_allowed_device device/device.h)
set(layer_allowed_bootstrap bootstrap/bootstrap.h base/socket.h)
set(layer_allowed_tuning tuning/selector.h algorithms/schedule.h)
set(layer_allowed_engine engine/plan.h engine/executor.h transports/transport.h algorithms/schedule.h)
set(layer_allowed_core core/comm.h engine/plan.h tuning/selector.h bootstrap/bootstrap.h)

set(probe_dir ${CMAKE_CURRENT_BINARY_DIR}/layering)
file(MAKE_DIRECTORY ${probe_dir})
set(expect ${PROJECT_SOURCE_DIR}/tests/integration/expect_status.sh)
foreach(layer base kernels topology algorithms transports device bootstrap tuning engine core)
  set(target atoll_${layer})
  # $<SEMICOLON>: a literal ';' would split the generator expression as a CMake list.
  set(incs "-I$<JOIN:$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>,$<SEMICOLON>-I>")
  set(d "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  set(defs "$<$<BOOL:${d}>:-D$<JOIN:${d},$<SEMICOLON>-D>>")
  foreach(kind forbidden allowed)
    foreach(header ${layer_${kind}_${layer}})
      string(MAKE_C_IDENTIFIER "${layer}_${kind}_${header}" id)
      file(WRITE ${probe_dir}/${id}.cc "#include \"${header}\"\n")
      if(kind STREQUAL forbidden)
        set(check -m "${header}: No such file" 1)
      else()
        set(check 0)
      endif()
      add_test(NAME layering_${id}
               COMMAND ${expect} ${check} ${CMAKE_CXX_COMPILER} -std=c++20 -fsyntax-only "${incs}" "${defs}"
                       ${probe_dir}/${id}.cc
               COMMAND_EXPAND_LISTS)
      set_tests_properties(layering_${id} PROPERTIES TIMEOUT 60 LABELS "layering")
    endforeach()
  endforeach()
endforeach()
