// Atoll's extensions beyond NCCL's API (include/atoll_ext.h): the selected device backend's
// streams and copies, for tools that fill and read ncclMemAlloc buffers without a CUDA runtime.
#include "atoll_ext.h"

#include "core/nccl_api.h"
#include "device/device.h"

using namespace atl;

namespace {

#define ATOLL_EXT_API(ret, name, ...) extern "C" __attribute__((visibility("default"))) ret name(__VA_ARGS__)

// The backend, refused when it has no streams: every call here is about stream order.
Result<const device::Device*> streamBackend(const char* fn) {
  ATOLL_ASSIGN_OR_RETURN(const device::Device* dev, device::select());
  if (!dev->streamOrdered())
    return ATOLL_ERROR(ncclInvalidUsage, "%s: the %s device backend has no streams (ATOLL_DEVICE=cuda or emu)", fn,
                       dev->name());
  return dev;
}

}  // namespace

ATOLL_EXT_API(ncclResult_t, atollStreamCreate, cudaStream_t* stream) {
  return apiGuard(__func__, [&]() -> Status {
    if (stream == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "atollStreamCreate: stream is NULL");
    ATOLL_ASSIGN_OR_RETURN(const device::Device* dev, streamBackend("atollStreamCreate"));
    ATOLL_ASSIGN_OR_RETURN(*stream, dev->createStream(dev->currentDevice()));
    return Status::Ok();
  });
}

ATOLL_EXT_API(ncclResult_t, atollStreamDestroy, cudaStream_t stream) {
  return apiGuard(__func__, [&]() -> Status {
    if (stream == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "atollStreamDestroy: stream is NULL");
    ATOLL_ASSIGN_OR_RETURN(const device::Device* dev, streamBackend("atollStreamDestroy"));
    return dev->destroyStream(dev->currentDevice(), stream);
  });
}

ATOLL_EXT_API(ncclResult_t, atollStreamSynchronize, cudaStream_t stream) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_ASSIGN_OR_RETURN(const device::Device* dev, streamBackend("atollStreamSynchronize"));
    return dev->synchronize(dev->currentDevice(), stream);
  });
}

ATOLL_EXT_API(ncclResult_t, atollMemcpy, void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  return apiGuard(__func__, [&]() -> Status {
    if (bytes > 0 && (dst == nullptr || src == nullptr))
      return ATOLL_ERROR(ncclInvalidArgument, "atollMemcpy: NULL buffer for %zu bytes", bytes);
    ATOLL_ASSIGN_OR_RETURN(const device::Device* dev, streamBackend("atollMemcpy"));
    return dev->copy(dev->currentDevice(), dst, src, bytes, stream);
  });
}
