# ABI test: compiled against NVIDIA's nccl.h, linked to Atoll's libnccl.so.2 (never to libcudart
# or NVIDIA's libnccl); abi_ours.cc exports the same layout numbers from Atoll's header.
if(NOT ATOLL_CUDA_INCLUDE OR NOT EXISTS ${ATOLL_CUDA_INCLUDE}/nccl.h)
  message(STATUS "ABI test skipped: no NVIDIA nccl.h (set ATOLL_CUDA_INCLUDE)")
  return()
endif()

add_library(abi_ours OBJECT ${CMAKE_CURRENT_LIST_DIR}/abi_ours.cc)
target_include_directories(abi_ours PRIVATE ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR})

add_executable(abi_test ${CMAKE_CURRENT_LIST_DIR}/abi_test.cc $<TARGET_OBJECTS:abi_ours>)
# BEFORE: NVIDIA's directory must precede include/ (which the nccl target adds) for <nccl.h>.
target_include_directories(abi_test BEFORE PRIVATE ${ATOLL_CUDA_INCLUDE})
target_include_directories(abi_test PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(abi_test PRIVATE nccl Threads::Threads ${CMAKE_DL_LIBS})
target_compile_definitions(abi_test PRIVATE ATOLL_EXPECTED_NCCL="$<TARGET_FILE:nccl>")
add_test(NAME abi_nvidia_header COMMAND abi_test)
set_tests_properties(abi_nvidia_header PROPERTIES TIMEOUT 60 LABELS "abi")
