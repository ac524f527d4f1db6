// The CUDA kernels embedded in the library (cuda_fatbin.cc), present when nvcc built them
// (ATOLL_HAVE_CUDA_KERNELS).
#pragma once

#include <span>

namespace atl::device {

std::span<const unsigned char> cudaFatbin();

}  // namespace atl::device
