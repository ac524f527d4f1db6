#include "atoll_lib.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>

namespace atoll_torch {
namespace {

template <class F>
void bind(void* handle, const std::string& path, const char* name, F*& fn) {
  fn = reinterpret_cast<F*>(dlsym(handle, name));
  if (fn == nullptr) throw std::runtime_error("atoll: " + path + " has no " + name);
}

AtollLib load() {
  AtollLib lib{};
  const char* env = std::getenv("ATOLL_LIBRARY");
  lib.path = env != nullptr && *env != '\0' ? env : ATOLL_LIBRARY_PATH;
  void* h = dlopen(lib.path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (h == nullptr) throw std::runtime_error(std::string("atoll: cannot load Atoll: ") + dlerror());
  bind(h, lib.path, "ncclGetUniqueId", lib.GetUniqueId);
  bind(h, lib.path, "ncclCommInitRankConfig", lib.CommInitRankConfig);
  bind(h, lib.path, "ncclCommDestroy", lib.CommDestroy);
  bind(h, lib.path, "ncclCommAbort", lib.CommAbort);
  bind(h, lib.path, "ncclCommSplit", lib.CommSplit);
  bind(h, lib.path, "ncclGetErrorString", lib.GetErrorString);
  bind(h, lib.path, "ncclGetLastError", lib.GetLastError);
  bind(h, lib.path, "ncclGetVersion", lib.GetVersion);
  bind(h, lib.path, "ncclGroupStart", lib.GroupStart);
  bind(h, lib.path, "ncclGroupEnd", lib.GroupEnd);
  bind(h, lib.path, "ncclAllReduce", lib.AllReduce);
  bind(h, lib.path, "ncclBroadcast", lib.Broadcast);
  bind(h, lib.path, "ncclReduce", lib.Reduce);
  bind(h, lib.path, "ncclAllGather", lib.AllGather);
  bind(h, lib.path, "ncclReduceScatter", lib.ReduceScatter);
  bind(h, lib.path, "ncclAlltoAll", lib.AlltoAll);
  bind(h, lib.path, "ncclGather", lib.Gather);
  bind(h, lib.path, "ncclScatter", lib.Scatter);
  bind(h, lib.path, "ncclSend", lib.Send);
  bind(h, lib.path, "ncclRecv", lib.Recv);
  bind(h, lib.path, "ncclRedOpCreatePreMulSum", lib.RedOpCreatePreMulSum);
  bind(h, lib.path, "ncclRedOpDestroy", lib.RedOpDestroy);
  bind(h, lib.path, "ncclMemAlloc", lib.MemAlloc);
  bind(h, lib.path, "ncclMemFree", lib.MemFree);
  return lib;
}

}  // namespace

const AtollLib& atoll() {
  static const AtollLib lib = load();  // thread-safe; a failure throws again on the next call
  return lib;
}

}  // namespace atoll_torch
