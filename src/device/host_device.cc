#include <cstdlib>
#include <cstring>
#include <string>

#include "base/debug.h"
#include "base/params.h"
#include "base/shared_pool.h"
#include "device/cuda_device.h"
#include "device/device.h"
#include "device/emu_device.h"
#include "kernels/host/reduce.h"

namespace atl::device {
namespace {

class HostDevice final : public Device {
 public:
  Kind kind() const override { return Kind::Host; }
  const char* name() const override { return "host"; }
  Result<void*> allocate(size_t bytes) const override {
    if (bytes > (SIZE_MAX >> 1)) return ATOLL_ERROR(ncclSystemError, "host allocation of %zu bytes failed", bytes);
    // From the shared pool, so shm links can move it in a single copy (base/shared_pool.h).
    Result<void*> shared = pool::allocate(bytes);
    if (shared.ok()) return shared;
    ATOLL_INFO(log::kAlloc, "ncclMemAlloc: %s; using private memory (shm links will copy it through their rings)",
               lastErrorMessage().c_str());
    // Page alignment keeps buffers friendly to shared-memory transports and SIMD kernels.
    size_t rounded = (bytes + 4095) / 4096 * 4096;
    void* p = std::aligned_alloc(4096, rounded == 0 ? 4096 : rounded);
    if (p == nullptr) return ATOLL_ERROR(ncclSystemError, "host allocation of %zu bytes failed", bytes);
    return p;
  }
  Status release(void* ptr) const override {
    if (pool::release(ptr)) return Status::Ok();
    std::free(ptr);
    return Status::Ok();
  }
  Status synchronize(int, cudaStream_t) const override { return Status::Ok(); }
};

}  // namespace

Status Device::copy(int, void* dst, const void* src, size_t bytes, cudaStream_t) const {
  std::memcpy(dst, src, bytes);
  return Status::Ok();
}

Status Device::copyAsync(int dev, void* dst, const void* src, size_t bytes, cudaStream_t stream) const {
  return copy(dev, dst, src, bytes, stream);
}

Status validate(const EwCall& call) {
  using kernels::cuda::EwOp;
  if (kernels::dtypeSize(call.dt) == 0) return ATOLL_ERROR(ncclInvalidArgument, "elementwise: invalid datatype %d", call.dt);
  if (call.op > EwOp::Divide) return ATOLL_ERROR(ncclInvalidArgument, "elementwise: invalid operation %d", int(call.op));
  if (call.op == EwOp::Divide && call.divisor < 1)
    return ATOLL_ERROR(ncclInvalidArgument, "elementwise: divisor %d is not >= 1", call.divisor);
  if (call.count > 0 && (call.dst == nullptr || call.a == nullptr || (kernels::cuda::isBinary(call.op) && call.b == nullptr)))
    return ATOLL_ERROR(ncclInvalidArgument, "elementwise: null buffer");
  return Status::Ok();
}

kernels::cuda::EwArgs launchArgs(const EwCall& call) {
  const bool binary = kernels::cuda::isBinary(call.op);
  kernels::cuda::EwArgs x{call.dst, call.a, binary ? call.b : nullptr, call.count, 0, 0, call.scalar, call.divisor};
  kernels::cuda::splitForPacks(x, kernels::dtypeSize(call.dt), binary);
  return x;
}

Status Device::elementwise(int, const EwCall& call, cudaStream_t) const {
  using kernels::cuda::EwOp;
  ATOLL_CHECK(validate(call));
  if (call.count == 0) return Status::Ok();
  switch (call.op) {
    case EwOp::Sum: kernels::reduce(call.dt, kernels::RedOp::Sum, call.dst, call.a, call.b, call.count); break;
    case EwOp::Prod: kernels::reduce(call.dt, kernels::RedOp::Prod, call.dst, call.a, call.b, call.count); break;
    case EwOp::Max: kernels::reduce(call.dt, kernels::RedOp::Max, call.dst, call.a, call.b, call.count); break;
    case EwOp::Min: kernels::reduce(call.dt, kernels::RedOp::Min, call.dst, call.a, call.b, call.count); break;
    case EwOp::Scale: kernels::scale(call.dt, call.dst, call.a, &call.scalar, call.count); break;
    case EwOp::Divide:
      if (call.dst != call.a) kernels::copy(call.dst, call.a, call.count * kernels::dtypeSize(call.dt));
      kernels::divide(call.dt, call.dst, call.count, call.divisor);
      break;
  }
  return Status::Ok();
}

Status validate(const IpcHandle& h, const Device& importer) {
  if (h.magic != IpcHandle::kMagic || h.version != IpcHandle::kVersion)
    return ATOLL_ERROR(ncclInvalidArgument, "not a device memory handle of this Atoll build (magic %#x, version %u)",
                       h.magic, unsigned{h.version});
  if (h.backend != static_cast<uint8_t>(importer.kind())) {
    static const char* const kNames[] = {"host", "cuda", "emu"};
    const char* from = h.backend < 3 ? kNames[h.backend] : "unknown";
    return ATOLL_ERROR(ncclInvalidUsage, "a device memory handle from the %s backend cannot be opened by the %s backend",
                       from, importer.name());
  }
  if (h.size == 0 || h.offset >= h.size)
    return ATOLL_ERROR(ncclInvalidArgument, "device memory handle: offset %llu is outside its %llu-byte allocation",
                       static_cast<unsigned long long>(h.offset), static_cast<unsigned long long>(h.size));
  return Status::Ok();
}

Result<IpcHandle> Device::exportMemory(const void*) const {
  return ATOLL_ERROR(ncclInvalidUsage, "the %s backend has no device memory to export", name());
}
Result<void*> Device::importMemory(const IpcHandle&) const {
  return ATOLL_ERROR(ncclInvalidUsage, "the %s backend cannot import device memory", name());
}
Status Device::closeImported(void*) const {
  return ATOLL_ERROR(ncclInvalidUsage, "the %s backend cannot import device memory", name());
}

Status Device::enablePeerAccess(int dev, int peerDev) const {
  if (dev == peerDev) return Status::Ok();
  return ATOLL_ERROR(ncclInvalidUsage, "the %s backend has no peer access between devices", name());
}

Result<void*> Device::allocateStaging(size_t bytes) const { return host().allocate(bytes); }

Status Device::releaseStaging(void* ptr) const { return host().release(ptr); }

namespace {
Status noStreams(const Device& d, const char* what) {
  return ATOLL_ERROR(ncclInternalError, "the %s backend has no streams (%s)", d.name(), what);
}
}  // namespace

Result<void*> Device::mark(int, cudaStream_t) const { return noStreams(*this, "mark"); }
Result<bool> Device::markPassed(int, void*) const { return noStreams(*this, "markPassed"); }
void Device::releaseMark(int, void*) const {}
Result<uint32_t*> Device::takeCounter(int) const { return noStreams(*this, "takeCounter"); }
void Device::returnCounter(uint32_t*) const {}
bool Device::streamWaitCounter(int, cudaStream_t, const uint32_t*, uint32_t) const { return false; }
Result<cudaStream_t> Device::createStream(int) const { return noStreams(*this, "createStream"); }
Status Device::destroyStream(int, cudaStream_t) const { return noStreams(*this, "destroyStream"); }

const Device& host() {
  static const HostDevice device;
  return device;
}

Result<const Device*> select() {
  const std::string& want = params::getString(params::Id::Device);
  if (want == "host") return &host();
  if (want == "emu") return &emu();
  if (want == "cuda") return cuda();
  if (want == "auto" || want.empty()) {
    // A GPU where a driver sees one; its absence is the ordinary case on CPU machines, not an error.
    return cudaPresent() ? cuda() : Result<const Device*>(&host());
  }
  return ATOLL_ERROR(ncclInvalidArgument, "ATOLL_DEVICE=%s is not a backend (valid: auto, host, cuda, emu)", want.c_str());
}

}  // namespace atl::device
