// Element loops of the host kernels, instantiated once per ISA variant by the .cc files.
// always_inline so that each target-specific caller vectorises the body for its own ISA; the
// callee (default target) is a subset of the caller's, which lets GCC inline it.
#pragma once

#include <emmintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/host/reduce.h"
#include "kernels/reduce_functors.h"

namespace atl::kernels::host {

// ivdep: the contract allows dst to alias a source exactly but never partially, so no iteration
// reads what an earlier one wrote. Without it GCC adds an overlap check that sends the common
// in-place case (dst == a) down the scalar loop. Clang only builds the fuzzers, whose
// instrumentation defeats vectorisation anyway: no hint there.
#if defined(__clang__)
#define ATOLL_IVDEP
#else
#define ATOLL_IVDEP _Pragma("GCC ivdep")
#endif
template <class T, class F>
[[gnu::always_inline]] inline void binaryLoop(T* d, const T* a, const T* b, size_t n, F f) {
ATOLL_IVDEP
  for (size_t i = 0; i < n; ++i) d[i] = f(a[i], b[i]);
}

template <class T, class F>
[[gnu::always_inline]] inline void unaryLoop(T* d, const T* s, size_t n, F f) {
ATOLL_IVDEP
  for (size_t i = 0; i < n; ++i) d[i] = f(s[i]);
}

// Destinations at least this large are written with non-temporal stores (out-of-place reduce
// only). A normal store first reads its line (write-allocate), turning reduce's 3 streams into 4 of
// memory traffic; that costs ~25% once the buffers exceed the cache, which is also when keeping dst
// in cache stops helping. glibc's memcpy makes the same trade at a similar size.
inline constexpr size_t kStreamingBytes = size_t{4} << 20;

// Copies a block that is in L1 to 64-byte-aligned dst with streaming stores (SSE2: baseline).
[[gnu::always_inline]] inline void streamBlock(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<__m128i*>(dst);
  const auto* s = static_cast<const __m128i*>(src);
  for (size_t i = 0; i < bytes / 16; ++i) _mm_stream_si128(d + i, _mm_load_si128(s + i));
}

// Out-of-place binary op for large buffers: computes one cache line at a time into a register-sized
// scratch line and streams it to dst. Works for every type and functor without per-type
// intrinsics: the compiler keeps the line in vector registers. Measured on the CI machine: line
// granularity matches a hand-written AVX2 load/add/stream loop (~memcpy speed), while staging
// 1-16 KiB blocks through L1 first lost 15-25%.
template <class T, class F>
[[gnu::always_inline]] inline void binaryLoopStreaming(T* d, const T* a, const T* b, size_t n, F f) {
  constexpr size_t kLine = 64 / sizeof(T);
  size_t head = ((64 - (reinterpret_cast<uintptr_t>(d) & 63)) & 63) / sizeof(T);
  if (head > n) head = n;
  binaryLoop(d, a, b, head, f);
  size_t i = head;
  for (; i + kLine <= n; i += kLine) {
    alignas(64) T line[kLine];
    binaryLoop(line, a + i, b + i, kLine, f);
    streamBlock(d + i, line, sizeof(line));
  }
  binaryLoop(d + i, a + i, b + i, n - i, f);
  _mm_sfence();  // streaming stores are weakly ordered; later flag writes must not pass them
}

/// AVX2 variants for the 16-bit floats (lowfloat_avx2.cc). Half needs f16cActive(), bfloat16
/// activeIsa() == Isa::Avx2.
void bf16ReduceAvx2(RedOp op, BFloat16* d, const BFloat16* a, const BFloat16* b, size_t n);
void bf16ScaleAvx2(BFloat16* d, const BFloat16* s, BFloat16 scalar, size_t n);
void halfReduceF16c(RedOp op, Half* d, const Half* a, const Half* b, size_t n);
void halfScaleF16c(Half* d, const Half* s, Half scalar, size_t n);
void halfDivideF16c(Half* d, size_t n, int divisor);

}  // namespace atl::kernels::host
