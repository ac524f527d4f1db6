#include "base/copy_bytes.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace atl::detail {

// 64 bytes per iteration from the end, so no load falls on the 4 KiB alias of a store just made;
// the head (under 64 bytes) by memcpy, which copies that little with vector moves.
void copyBackward(void* dstBytes, const void* srcBytes, size_t n) {
  auto* dst = static_cast<std::byte*>(dstBytes);
  const auto* src = static_cast<const std::byte*>(srcBytes);
  size_t i = n;
#if defined(__x86_64__)
  for (; i >= 64; i -= 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i - 16));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i - 32));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i - 48));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i - 64));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i - 16), a);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i - 32), b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i - 48), c);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i - 64), d);
  }
#endif
  std::memcpy(dst, src, i);
}

}  // namespace atl::detail
