// Python module atoll_torch._C: the creator torch.distributed calls for backend "atoll".
#include <pybind11/chrono.h>
#include <torch/python.h>

#include "atoll_lib.h"
#include "process_group_atoll.h"
#include "shared_allocator.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "Atoll's torch.distributed backend for CPU tensors";
  m.def("create_backend", &atoll_torch::ProcessGroupAtoll::create, "Creates an Atoll process group",
        pybind11::arg("store"), pybind11::arg("rank"), pybind11::arg("size"), pybind11::arg("timeout"));
  m.def("library_path", [] { return atoll_torch::atoll().path; }, "The libatoll.so this module uses");
  m.def("enable_shared_memory", &atoll_torch::enableSharedCpuAllocator, pybind11::arg("min_bytes"),
        pybind11::arg("cache_bytes"));
  m.def("disable_shared_memory", &atoll_torch::disableSharedCpuAllocator);
  m.def("is_shared", [](const at::Tensor& t) { return atoll_torch::isShared(t.storage().data_ptr()); });
  m.def("nccl_version", [] {
    int v = 0;
    atoll_torch::atoll().GetVersion(&v);
    return v;
  });
}
