// -D 1: the perf tools' buffers in device memory, as nccl-tests has them. Buffers come from
// ncclMemAlloc (device memory on a device backend); each rank gets a stream of its own; patterns go
// in and results come out through Atoll's extension calls (include/atoll_ext.h), looked up at run
// time so the tools still load on NVIDIA's libnccl (where -D 1 then says what is missing).
#pragma once

#include <string>

#include "nccl.h"

namespace atl::perf {

struct DeviceCalls {
  ncclResult_t (*streamCreate)(cudaStream_t*) = nullptr;
  ncclResult_t (*streamDestroy)(cudaStream_t) = nullptr;
  ncclResult_t (*streamSynchronize)(cudaStream_t) = nullptr;
  ncclResult_t (*memcpy)(void*, const void*, size_t, cudaStream_t) = nullptr;
};

/// The calls of the loaded libnccl, or false with *error naming what is missing.
bool findDeviceCalls(DeviceCalls* calls, std::string* error);

}  // namespace atl::perf
