// The elementwise kernels' fatbin (kernels/cuda/elementwise_kernels.cu, built by nvcc), embedded
// in the library's read-only data: the driver loads it from memory (cuModuleLoadData), so the
// library ships one file and links neither the CUDA runtime nor libcuda.
#include "device/cuda_fatbin.h"

#ifndef ATOLL_CUDA_FATBIN_PATH
#error "ATOLL_CUDA_FATBIN_PATH names the fatbin to embed (set by src/device/CMakeLists.txt)"
#endif

// The fatbin header wants 8-byte alignment; 64 is a cache line and costs nothing.
asm(".pushsection .rodata.atoll_cuda_fatbin, \"a\"\n"
    ".balign 64\n"
    ".hidden atollCudaFatbinStart\n"
    ".globl atollCudaFatbinStart\n"
    "atollCudaFatbinStart:\n"
    ".incbin \"" ATOLL_CUDA_FATBIN_PATH "\"\n"
    ".hidden atollCudaFatbinEnd\n"
    ".globl atollCudaFatbinEnd\n"
    "atollCudaFatbinEnd:\n"
    ".popsection\n");

extern "C" const unsigned char atollCudaFatbinStart[];
extern "C" const unsigned char atollCudaFatbinEnd[];

namespace atl::device {

std::span<const unsigned char> cudaFatbin() {
  return {atollCudaFatbinStart, static_cast<size_t>(atollCudaFatbinEnd - atollCudaFatbinStart)};
}

}  // namespace atl::device
