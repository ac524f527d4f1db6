// Compile-only check that kernels/reduce_functors.h builds as device code: every functor for every
// datatype is instantiated in a __global__ kernel. Built by nvcc -c when ATOLL_HAVE_NVCC; never run.
#include <cstddef>
#include <cstdint>

#include "kernels/reduce_functors.h"

namespace {

using namespace atl::kernels;

template <class T>
__global__ void allOps(T* out, const T* a, const T* b, size_t n, T scalar, int divisor) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  T r = FuncSum<T>{}(a[i], b[i]);
  r = FuncProd<T>{}(r, b[i]);
  r = FuncMax<T>{}(r, a[i]);
  r = FuncMin<T>{}(r, b[i]);
  r = FuncScale<T>{scalar}(r);
  out[i] = FuncDivide<T>{divisor}(r);
}

__global__ void conversions(float* out, const float* in, size_t n) {
  const size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  const float x = in[i];
  out[i] = toFloat(halfFromFloat(x)) + toFloat(bf16FromFloat(x)) + toFloat(e4m3FromFloat(x)) +
           toFloat(e5m2FromFloat(x));
}

}  // namespace

// Host-side references force the instantiations into the object file.
void* atollFunctorsCheckKernels[] = {
    reinterpret_cast<void*>(&allOps<int8_t>),   reinterpret_cast<void*>(&allOps<uint8_t>),
    reinterpret_cast<void*>(&allOps<int32_t>),  reinterpret_cast<void*>(&allOps<uint32_t>),
    reinterpret_cast<void*>(&allOps<int64_t>),  reinterpret_cast<void*>(&allOps<uint64_t>),
    reinterpret_cast<void*>(&allOps<float>),    reinterpret_cast<void*>(&allOps<double>),
    reinterpret_cast<void*>(&allOps<Half>),     reinterpret_cast<void*>(&allOps<BFloat16>),
    reinterpret_cast<void*>(&allOps<Fp8E4M3>),  reinterpret_cast<void*>(&allOps<Fp8E5M2>),
    reinterpret_cast<void*>(&conversions),
};
