# ABI tests: compiled against NVIDIA's nccl.h, linked to Atoll's libnccl.so.2 (never to libcudart
# or NVIDIA's libnccl); abi_ours.cc exports the same layout numbers from Atoll's header. Two NVIDIA
# headers: 2.28 (the CUDA toolkit's; programs built then must keep working) and 2.30.7 (the
# nvidia-nccl-cu13 wheel that today's PyTorch links; Atoll must match it exactly).
if(NOT ATOLL_CUDA_INCLUDE OR NOT EXISTS ${ATOLL_CUDA_INCLUDE}/nccl.h)
  message(STATUS "ABI test skipped: no NVIDIA nccl.h (set ATOLL_CUDA_INCLUDE)")
  return()
endif()

add_library(abi_ours OBJECT ${CMAKE_CURRENT_LIST_DIR}/abi_ours.cc)
target_include_directories(abi_ours PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR})

# name, directories searched first for <nccl.h> (BEFORE: they must precede include/, which the
# nccl target adds)
function(atoll_abi_test name)
  add_executable(${name} ${CMAKE_CURRENT_LIST_DIR}/abi_test.cc $<TARGET_OBJECTS:abi_ours>)
  target_include_directories(${name} BEFORE PRIVATE ${ARGN})
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PRIVATE nccl Threads::Threads ${CMAKE_DL_LIBS})
  target_compile_definitions(${name} PRIVATE ATOLL_EXPECTED_NCCL="$<TARGET_FILE:nccl>")
endfunction()

atoll_abi_test(abi_test ${ATOLL_CUDA_INCLUDE})
add_test(NAME abi_nvidia_header COMMAND abi_test)
set_tests_properties(abi_nvidia_header PROPERTIES TIMEOUT 60 LABELS "abi")

if(NOT ATOLL_HAVE_NCCL230)
  return()
endif()
atoll_abi_test(abi_test_230 ${ATOLL_NCCL230_ROOT}/include ${ATOLL_CUDA_INCLUDE})
# NVIDIA's NCCL_COMM_PROPERTIES_INITIALIZER names only the first three fields, and its device
# headers define static helpers a host program does not use.
target_compile_options(abi_test_230 PRIVATE -Wno-missing-field-initializers -Wno-unused-function)
add_test(NAME abi_nvidia_header_230 COMMAND abi_test_230)
set_tests_properties(abi_nvidia_header_230 PROPERTIES TIMEOUT 60 LABELS "abi")

# Every symbol NVIDIA's 2.30.7 library exports (nccl* and their pnccl* twins) must be in ours.
add_test(NAME abi_symbol_set_230
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/symbol_set.sh ${ATOLL_NCCL230_ROOT}/lib/libnccl.so.2 $<TARGET_FILE:nccl>)
set_tests_properties(abi_symbol_set_230 PROPERTIES TIMEOUT 60 LABELS "abi")
# The check itself must be able to fail: against a library that lacks 2.30's additions.
add_test(NAME abi_symbol_set_detects_missing
         COMMAND ${PROJECT_SOURCE_DIR}/tests/integration/expect_status.sh -m "^missing from" -m "ncclCommGrow" 1
                 ${CMAKE_CURRENT_LIST_DIR}/symbol_set.sh ${ATOLL_NCCL230_ROOT}/lib/libnccl.so.2 $<TARGET_FILE:abi_old_lib>)
set_tests_properties(abi_symbol_set_detects_missing PROPERTIES TIMEOUT 60 LABELS "abi")
add_library(abi_old_lib SHARED ${CMAKE_CURRENT_LIST_DIR}/abi_old_lib.c)

# The drop-in: PyTorch (which links NVIDIA's libnccl.so.2 2.30) imports with ours preloaded and
# reports our version.
# Not under sanitizers: their runtime must come first in a process, and python does not have it.
if(ATOLL_HAVE_TORCH AND ATOLL_SANITIZE STREQUAL "")
  add_test(NAME dropin_torch_import
           COMMAND ${CMAKE_COMMAND} -E env LD_PRELOAD=$<TARGET_FILE:nccl>
                   ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/torch_import.py $<TARGET_FILE:nccl>)
  set_tests_properties(dropin_torch_import PROPERTIES TIMEOUT 120 LABELS "abi")
endif()
