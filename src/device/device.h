// Device HAL. The host backend is always built: buffers are CPU memory and a NULL (or any) stream
// means "complete before the call returns". The CUDA backend is declared here and selectable by
// name, but not built yet: choosing it fails with a clear error.
#pragma once

#include <cstddef>

#include "base/status.h"
#include "nccl.h"

namespace atl::device {

enum class Kind { Host, Cuda };

class Device {
 public:
  virtual ~Device() = default;
  virtual Kind kind() const = 0;
  virtual const char* name() const = 0;
  virtual Result<void*> allocate(size_t bytes) const = 0;
  virtual Status release(void* ptr) const = 0;
  /// Waits until work enqueued on `stream` is done; the host backend runs everything synchronously.
  virtual Status synchronize(cudaStream_t stream) const = 0;
};

/// The backend chosen by ATOLL_DEVICE (auto: CUDA if built and a GPU is visible, else host).
Result<const Device*> select();
const Device& host();

}  // namespace atl::device
