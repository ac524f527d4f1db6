// Device HAL. Three backends share one interface:
// - host: buffers are CPU memory, streams are ignored (a call is complete when it returns);
// - cuda: GPU memory and cudaStream_t through the driver API, loaded at run time (cuda_driver.h),
//   so the library loads and the host backend runs on machines without a driver;
// - emu: an emulated GPU for tests (emu_device.h). Its memory is unreadable by the host and its
//   streams run on threads, so every stream-ordering and staging path of the cuda backend runs,
//   and fails loudly when wrong, on a machine without a GPU.
// The engine never sees device memory: the core stages it through host memory (core/device_staging.h).
#pragma once

#include <cstddef>

#include "base/status.h"
#include "nccl.h"

namespace atl::device {

enum class Kind { Host, Cuda, Emu };

class Device {
 public:
  virtual ~Device() = default;
  virtual Kind kind() const = 0;
  virtual const char* name() const = 0;
  /// ncclMemAlloc: memory collectives may use (device memory on a GPU backend).
  virtual Result<void*> allocate(size_t bytes) const = 0;
  virtual Status release(void* ptr) const = 0;
  /// Waits until work enqueued on `stream` is done; the host backend runs everything synchronously.
  virtual Status synchronize(int dev, cudaStream_t stream) const = 0;

  /// Whether calls on this backend are ordered by their stream (everything but the host).
  virtual bool streamOrdered() const { return false; }
  /// Whether the host cannot read or write `ptr` directly, so a collective must stage it.
  virtual bool needsStaging(const void* ptr) const {
    (void)ptr;
    return false;
  }
  /// The device index a communicator created by this thread belongs to (the current context's).
  virtual int currentDevice() const { return 0; }
  /// Copies after the stream's earlier work and returns once the bytes arrived, as
  /// cudaMemcpyAsync followed by cudaStreamSynchronize. `dst`/`src` may be host or device memory.
  virtual Status copy(int dev, void* dst, const void* src, size_t bytes, cudaStream_t stream) const;
  /// Host memory the backend copies to and from fastest (pinned on CUDA), for staging.
  virtual Result<void*> allocateStaging(size_t bytes) const;
  virtual Status releaseStaging(void* ptr) const;
};

/// The backend chosen by ATOLL_DEVICE (auto: CUDA if a driver and a GPU are present, else host).
Result<const Device*> select();
const Device& host();

}  // namespace atl::device
