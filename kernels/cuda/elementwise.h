// The CUDA backend's elementwise kernels (reduce, scale, divide), written once as a per-thread body
// that nvcc compiles into the kernels (elementwise_kernels.cu) and the host compiler compiles for
// the emulated GPU (ATOLL_DEVICE=emu), which runs the same body for every thread of the grid. So
// the index arithmetic a GPU runs (scalar head, 16-byte packs, scalar tail, grid stride) is
// exercised, and checked against the host kernels, on machines without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/reduce_functors.h"

#if defined(__CUDACC__)
#define ATOLL_UNROLL _Pragma("unroll")
#define ATOLL_MAY_ALIAS
#else
#define ATOLL_UNROLL
// The host build (the emulated GPU) reads T buffers through Pack: tell the optimiser.
#define ATOLL_MAY_ALIAS [[gnu::may_alias]]
#endif

namespace atl::kernels::cuda {

/// The operations, in the order of their kernel names' table (kOpTags).
enum class EwOp : uint8_t { Sum, Prod, Max, Min, Scale, Divide };
inline constexpr int kEwOps = 6;
/// Sum, Prod, Max and Min read two inputs; Scale and Divide one.
ATOLL_HOST_DEVICE constexpr bool isBinary(EwOp op) { return op <= EwOp::Min; }
/// Threads per block of every launch (the kernels' __launch_bounds__).
inline constexpr unsigned kBlockThreads = 512;

/// One launch's arguments, passed by value as the kernel's only parameter.
struct EwArgs {
  void* dst;
  const void* a;
  const void* b;  // second input of the binary ops; unused by Scale and Divide
  uint64_t count;
  uint64_t head;   // elements before the first 16-byte pack
  uint64_t packs;  // 16-byte packs after the head; the rest is the tail
  uint64_t scalar;  // Scale: the multiplier, in the buffer's type, in the low bytes
  int32_t divisor;  // Divide: >= 1
};

/// 16 bytes: the widest load or store one GPU thread issues as a single instruction.
struct alignas(16) ATOLL_MAY_ALIAS Pack {
  uint32_t w[4];
};

/// Splits [0, count) into a scalar head, 16-byte packs and a scalar tail. Packs need all pointers
/// at the same offset modulo 16 (and element-aligned); otherwise every element is scalar.
ATOLL_HOST_DEVICE inline void splitForPacks(EwArgs& x, size_t elemSize, bool binary) {
  const uintptr_t d = reinterpret_cast<uintptr_t>(x.dst);
  const uintptr_t a = reinterpret_cast<uintptr_t>(x.a);
  const uintptr_t b = binary ? reinterpret_cast<uintptr_t>(x.b) : d;
  const uintptr_t mis = d & 15u;
  if (((d ^ a) & 15u) != 0 || ((d ^ b) & 15u) != 0 || mis % elemSize != 0) {
    x.head = x.count;
    x.packs = 0;
    return;
  }
  uint64_t head = ((16u - mis) & 15u) / elemSize;
  if (head > x.count) head = x.count;
  x.head = head;
  x.packs = (x.count - head) * elemSize / 16u;
}

/// The grid a launch of `x` uses: a thread per pack or scalar element of the largest part, at most
/// `maxBlocks` blocks of `threadsPerBlock` (the grid stride covers the rest).
ATOLL_HOST_DEVICE inline uint32_t blocksFor(const EwArgs& x, size_t elemSize, uint32_t threadsPerBlock,
                                            uint32_t maxBlocks) {
  const uint64_t tail = x.count - x.head - x.packs * (16u / elemSize);
  uint64_t items = x.packs > x.head ? x.packs : x.head;
  if (tail > items) items = tail;
  uint64_t blocks = (items + threadsPerBlock - 1) / threadsPerBlock;
  if (blocks == 0) blocks = 1;
  return static_cast<uint32_t>(blocks < maxBlocks ? blocks : maxBlocks);
}

template <class T, template <class> class Fn>
struct BinaryOp {
  static constexpr bool kBinary = true;
  ATOLL_HOST_DEVICE T operator()(T a, T b) const { return Fn<T>{}(a, b); }
};
template <class T>
struct ScaleOp {
  static constexpr bool kBinary = false;
  FuncScale<T> f;
  ATOLL_HOST_DEVICE T operator()(T a, T) const { return f(a); }
};
template <class T>
struct DivideOp {
  static constexpr bool kBinary = false;
  FuncDivide<T> f;
  ATOLL_HOST_DEVICE T operator()(T a, T) const { return f(a); }
};

inline constexpr int kUnroll = 4;

/// `op` on each element of a pack (and of `b`'s, for binary ops).
template <class T, class Op>
ATOLL_HOST_DEVICE inline Pack applyPack(Op op, const Pack& a, const Pack& b) {
  constexpr int kPer = static_cast<int>(sizeof(Pack) / sizeof(T));
  T ea[kPer];
  __builtin_memcpy(ea, &a, sizeof(Pack));
  if constexpr (Op::kBinary) {
    T eb[kPer];
    __builtin_memcpy(eb, &b, sizeof(Pack));
ATOLL_UNROLL
    for (int k = 0; k < kPer; ++k) ea[k] = op(ea[k], eb[k]);
  } else {
    (void)b;
ATOLL_UNROLL
    for (int k = 0; k < kPer; ++k) ea[k] = op(ea[k], ea[k]);
  }
  Pack r;
  __builtin_memcpy(&r, ea, sizeof(Pack));
  return r;
}

/// The work of thread `thread` of `threads`: elements and packs at stride `threads`, so
/// neighbouring threads touch neighbouring packs (coalesced on a GPU).
template <class T, class Op>
ATOLL_HOST_DEVICE void ewThread(const EwArgs& x, Op op, uint64_t thread, uint64_t threads) {
  constexpr uint64_t kPer = sizeof(Pack) / sizeof(T);
  T* dst = static_cast<T*>(x.dst);
  const T* a = static_cast<const T*>(x.a);
  const T* b = Op::kBinary ? static_cast<const T*>(x.b) : a;
  for (uint64_t i = thread; i < x.head; i += threads) dst[i] = op(a[i], b[i]);
  Pack* pd = reinterpret_cast<Pack*>(dst + x.head);
  const Pack* pa = reinterpret_cast<const Pack*>(a + x.head);
  const Pack* pb = reinterpret_cast<const Pack*>(b + x.head);
  uint64_t p = thread;
  // kUnroll packs per step, all loads issued before any math, so a GPU thread keeps that many
  // 16-byte loads in flight: one at a time cannot saturate HBM.
  for (; p + (kUnroll - 1) * threads < x.packs; p += kUnroll * threads) {
    Pack va[kUnroll];
ATOLL_UNROLL
    for (int u = 0; u < kUnroll; ++u) va[u] = pa[p + u * threads];
    if constexpr (Op::kBinary) {
      Pack vb[kUnroll];
ATOLL_UNROLL
      for (int u = 0; u < kUnroll; ++u) vb[u] = pb[p + u * threads];
ATOLL_UNROLL
      for (int u = 0; u < kUnroll; ++u) pd[p + u * threads] = applyPack<T>(op, va[u], vb[u]);
    } else {
ATOLL_UNROLL
      for (int u = 0; u < kUnroll; ++u) pd[p + u * threads] = applyPack<T>(op, va[u], va[u]);
    }
  }
  for (; p < x.packs; p += threads) {
    const Pack va = pa[p];
    if constexpr (Op::kBinary) {
      const Pack vb = pb[p];
      pd[p] = applyPack<T>(op, va, vb);
    } else {
      pd[p] = applyPack<T>(op, va, va);
    }
  }
  for (uint64_t i = x.head + x.packs * kPer + thread; i < x.count; i += threads) dst[i] = op(a[i], b[i]);
}

}  // namespace atl::kernels::cuda
