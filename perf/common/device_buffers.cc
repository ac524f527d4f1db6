#include "perf/common/device_buffers.h"

#include <dlfcn.h>

namespace atl::perf {
namespace {

template <class F>
bool lookUp(const char* name, F* out, std::string* error) {
  *out = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  if (*out != nullptr) return true;
  *error = std::string("-D 1 needs Atoll's libnccl (") + name + " is not exported by the loaded NCCL library)";
  return false;
}

}  // namespace

bool findDeviceCalls(DeviceCalls* calls, std::string* error) {
  return lookUp("atollStreamCreate", &calls->streamCreate, error) &&
         lookUp("atollStreamDestroy", &calls->streamDestroy, error) &&
         lookUp("atollStreamSynchronize", &calls->streamSynchronize, error) &&
         lookUp("atollMemcpy", &calls->memcpy, error);
}

}  // namespace atl::perf
