// The CUDA backend (device.h). The driver is loaded at run time (dlopen of libcuda.so.1), never
// linked, so libnccl.so.2 loads on machines without one; there the backend reports why it cannot
// run and ATOLL_DEVICE=auto falls back to the host.
#pragma once

#include <string>

#include "device/device.h"

namespace atl::device {

/// The CUDA backend, or why it cannot run here (built without CUDA headers, no driver, no GPU).
Result<const Device*> cuda();
/// Whether cuda() would succeed, without raising an error when it would not.
bool cudaPresent();
/// Why cuda() would fail (empty when it would not), without raising an error.
std::string cudaAbsence();

}  // namespace atl::device
