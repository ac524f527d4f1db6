# The torch.distributed backend (python/) end to end: real torchrun processes, Gloo as the reference.
if(NOT ATOLL_HAVE_TORCH OR NOT ATOLL_SANITIZE STREQUAL "")
  return()
endif()
set(ATOLL_TORCH_ENV ${CMAKE_COMMAND} -E env PYTHONPATH=${PROJECT_BINARY_DIR}/python OMP_NUM_THREADS=1)
set(ATOLL_TORCHRUN ${ATOLL_TORCH_ENV} ${Python3_EXECUTABLE} -m torch.distributed.run --standalone)
foreach(n 2 4)
  add_test(NAME torch_collectives_np${n}
           COMMAND ${ATOLL_TORCHRUN} --nproc-per-node ${n} ${CMAKE_CURRENT_LIST_DIR}/collectives_vs_gloo.py)
  add_test(NAME torch_ddp_np${n} COMMAND ${ATOLL_TORCHRUN} --nproc-per-node ${n} ${CMAKE_CURRENT_LIST_DIR}/ddp_vs_gloo.py)
  # Tensors from Atoll's shared pool (allocate_tensor, use_shared_memory): single copy over shm.
  add_test(NAME torch_shared_memory_np${n}
           COMMAND ${ATOLL_TORCHRUN} --nproc-per-node ${n} ${CMAKE_CURRENT_LIST_DIR}/shared_memory.py)
  add_test(NAME torch_ddp_shared_np${n}
           COMMAND ${ATOLL_TORCHRUN} --nproc-per-node ${n} ${CMAKE_CURRENT_LIST_DIR}/ddp_vs_gloo.py --shared)
  set_tests_properties(torch_collectives_np${n} torch_ddp_np${n} torch_shared_memory_np${n} torch_ddp_shared_np${n}
                       PROPERTIES TIMEOUT 400 LABELS "torch;integration")
endforeach()
add_test(NAME torch_kill_worker_np4 COMMAND ${ATOLL_TORCH_ENV} ${Python3_EXECUTABLE}
                                            ${CMAKE_CURRENT_LIST_DIR}/kill_worker.py --nproc 4)
set_tests_properties(torch_kill_worker_np4 PROPERTIES TIMEOUT 120 LABELS "torch;fault")
# A bad tensor or argument raises with Atoll's message, and the package refuses a missing library.
add_test(NAME torch_errors COMMAND ${ATOLL_TORCH_ENV} ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/errors.py)
set_tests_properties(torch_errors PROPERTIES TIMEOUT 120 LABELS "torch")
# perf/torch/bench.py still runs (a few sizes, one round): it is how the README's figures are made.
add_test(NAME perf_torch_bench_smoke
         COMMAND ${ATOLL_TORCHRUN} --nproc-per-node 2 ${PROJECT_SOURCE_DIR}/perf/torch/bench.py
                 -b 1K -e 1M -f 32 --rounds 1 --ddp-steps 1)
set_tests_properties(perf_torch_bench_smoke PROPERTIES TIMEOUT 300 LABELS "torch;perf")
