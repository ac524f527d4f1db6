// The CUDA backend's elementwise kernels, one per operation and datatype, compiled by nvcc into a
// fatbin that libnccl carries (src/device/cuda_fatbin.cc) and the driver loads by name
// (cuModuleGetFunction), so the library links neither the CUDA runtime nor libcuda. The body is
// shared with the emulated GPU (elementwise.h). Names: atoll_ew_<op>_<type>.
#include "kernels/cuda/elementwise.h"

namespace {
using namespace atl::kernels;
using namespace atl::kernels::cuda;

template <class T, class Op>
__device__ __forceinline__ void run(const EwArgs& x, Op op) {
  const uint64_t threads = static_cast<uint64_t>(gridDim.x) * blockDim.x;
  ewThread<T>(x, op, static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x, threads);
}

template <class T>
__device__ __forceinline__ T scalarOf(uint64_t bits) {
  T s;
  __builtin_memcpy(&s, &bits, sizeof(T));
  return s;
}
}  // namespace

#define ATOLL_EW_KERNELS(tag, T)                                                                         \
  extern "C" __global__ void __launch_bounds__(kBlockThreads) atoll_ew_sum_##tag(EwArgs x) { run<T>(x, BinaryOp<T, FuncSum>{}); } \
  extern "C" __global__ void __launch_bounds__(kBlockThreads) atoll_ew_prod_##tag(EwArgs x) { run<T>(x, BinaryOp<T, FuncProd>{}); } \
  extern "C" __global__ void __launch_bounds__(kBlockThreads) atoll_ew_max_##tag(EwArgs x) { run<T>(x, BinaryOp<T, FuncMax>{}); } \
  extern "C" __global__ void __launch_bounds__(kBlockThreads) atoll_ew_min_##tag(EwArgs x) { run<T>(x, BinaryOp<T, FuncMin>{}); } \
  extern "C" __global__ void __launch_bounds__(kBlockThreads) atoll_ew_scale_##tag(EwArgs x) {                \
    run<T>(x, ScaleOp<T>{FuncScale<T>{scalarOf<T>(x.scalar)}});                                          \
  }                                                                                                      \
  extern "C" __global__ void __launch_bounds__(kBlockThreads) atoll_ew_divide_##tag(EwArgs x) {               \
    run<T>(x, DivideOp<T>{FuncDivide<T>{x.divisor}});                                                    \
  }

ATOLL_EW_KERNELS(i8, int8_t)
ATOLL_EW_KERNELS(u8, uint8_t)
ATOLL_EW_KERNELS(i32, int32_t)
ATOLL_EW_KERNELS(u32, uint32_t)
ATOLL_EW_KERNELS(i64, int64_t)
ATOLL_EW_KERNELS(u64, uint64_t)
ATOLL_EW_KERNELS(f16, Half)
ATOLL_EW_KERNELS(f32, float)
ATOLL_EW_KERNELS(f64, double)
ATOLL_EW_KERNELS(bf16, BFloat16)
ATOLL_EW_KERNELS(e4m3, Fp8E4M3)
ATOLL_EW_KERNELS(e5m2, Fp8E5M2)
