// Bulk copies between buffers, for the data path (kernels::copy, the shared-memory rings).
//
// Why not memcpy alone: glibc copies from about 2 KiB up to the L2 size with `rep movsb`, and on
// the AMD EPYC of the development VM that instruction is 13-20x slower (2-3 GB/s copied) when the
// destination lies 1 to 31 bytes past the source modulo 4 KiB (build/perf/bench_kernels
// --benchmark_filter='^(copy|memcpy)/', perf/bench/README.md). That happens in the engine without anyone
// asking for it: a page-aligned user buffer (ncclMemAlloc, aligned allocators) copied to or from
// scratch that malloc placed 16 bytes into a page, or a ring position 8 or 16 bytes past a page
// after the single-copy header words. An in-place 128 KiB all-reduce of ncclMemAlloc buffers took
// 70-180 us instead of 17. Those copies go through a plain SSE2 loop instead, backwards, so no
// load falls on the 4 KiB alias of a store just made.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace atl {
namespace detail {
// The slow window, with margin: measured bad for 1..31 bytes ahead, and partly for 32..47.
inline constexpr uintptr_t kCopyAheadLimit = 64;
// Below this glibc uses vector loops, which are not affected; above the maximum, its large-copy
// path, which is not either.
inline constexpr size_t kCopyLoopMin = 2048;
inline constexpr size_t kCopyLoopMax = size_t{4} << 20;
void copyBackward(void* dst, const void* src, size_t n);
}  // namespace detail

/// memcpy's contract: [src, src + n) and [dst, dst + n) do not overlap. Inline, because the small
/// messages of the shared-memory rings come through here too.
inline void copyBytes(void* dst, const void* src, size_t n) {
#if defined(__x86_64__)
  const uintptr_t ahead = (reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(src)) & 4095;
  if (n >= detail::kCopyLoopMin && n <= detail::kCopyLoopMax && ahead != 0 && ahead < detail::kCopyAheadLimit) {
    detail::copyBackward(dst, src, n);
    return;
  }
#endif
  std::memcpy(dst, src, n);
}

}  // namespace atl
