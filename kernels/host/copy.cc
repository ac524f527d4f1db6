// Copies for the engine and the shared-memory rings. Blocks from a few KiB up go through a vector
// loop of our own instead of memcpy: glibc (2.36) copies them with `rep movsb` on CPUs that
// advertise fast string moves, and on the AMD EPYC development VM whole 2-rank runs then moved
// 1 MiB all-reduces 5-8x slower than the same build in the next run, the profile all memmove
// (perf/baselines/README.md). Small copies stay with memcpy, which is best at those sizes.
#include <immintrin.h>

#include <cstring>

#include "kernels/host/isa.h"
#include "kernels/host/reduce.h"

namespace atl::kernels {
namespace {

constexpr size_t kVectorCopyMin = 4096;

[[gnu::target("avx2")]] void copyAvx2(std::byte* d, const std::byte* s, size_t n) {
  size_t i = 0;
  for (; i + 128 <= n; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 64));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 96));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i), a);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 32), b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 64), c);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + i + 96), e);
  }
  if (i < n) std::memcpy(d + i, s + i, n - i);
}

}  // namespace

void copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0 || dst == src) return;
  if (bytes >= kVectorCopyMin && activeIsa() == Isa::Avx2)
    copyAvx2(static_cast<std::byte*>(dst), static_cast<const std::byte*>(src), bytes);
  else
    std::memcpy(dst, src, bytes);
}

}  // namespace atl::kernels
