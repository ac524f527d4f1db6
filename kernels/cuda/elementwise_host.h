// The host side of the CUDA elementwise kernels: their names in the fatbin, and a host run of the
// kernel body over a whole grid, which is how the emulated GPU executes a launch.
#pragma once

#include <string>

#include "kernels/cuda/elementwise.h"
#include "nccl.h"

namespace atl::kernels::cuda {

/// atoll_ew_<op>_<type>, the kernel's name in the fatbin; empty for an invalid op or type.
std::string kernelName(EwOp op, ncclDataType_t dt);
const char* opName(EwOp op);

/// Runs the kernel for (op, dt) on `x` as a grid of `threads` threads would, one thread after the
/// other. `x` must be split (splitForPacks) and its pointers readable by the host. False for an
/// invalid op or type.
bool runGridOnHost(EwOp op, ncclDataType_t dt, const EwArgs& x, uint64_t threads);

}  // namespace atl::kernels::cuda
