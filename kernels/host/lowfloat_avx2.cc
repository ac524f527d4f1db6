// AVX2 loops for the 16-bit floats. half uses F16C conversions (the scalar binary16 rounding is too
// branchy to auto-vectorise); F16C rounds to nearest even and quiets NaNs exactly like
// kernels/reduce_functors.h. bfloat16 is widened and rounded with integer ops, which GCC's
// auto-vectoriser handles poorly (it splits the NaN select and the 32->16 narrowing).
#include <immintrin.h>

#include "kernels/host/loops.h"

#define ATOLL_F16C [[gnu::target("avx2,f16c")]]
#define ATOLL_AVX2 [[gnu::target("avx2")]]

namespace atl::kernels::host {
namespace {

ATOLL_F16C inline __m256 load8(const Half* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
ATOLL_F16C inline void store8(Half* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

ATOLL_AVX2 inline __m256 loadBf8(const BFloat16* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}
// Same arithmetic as bf16FromFloat: add 0x7fff plus the kept lsb, NaNs keep payload and turn quiet.
ATOLL_AVX2 inline __m128i roundBf8(__m256 v) {
  const __m256i u = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
  const __m256i isNan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  const __m256i r = _mm256_blendv_epi8(rounded, nan, isNan);
  // packus works within 128-bit lanes: gather the two lanes' low halves afterwards.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  return _mm256_castsi256_si128(packed);
}
ATOLL_AVX2 inline void storeBf8(BFloat16* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), roundBf8(v));
}

// maxps/minps return the second operand when either is NaN; blending a back in where a is NaN
// gives exactly detail::maxOf/minOf (a NaN wins, else b NaN wins, ties return b).
struct VSum {
  ATOLL_F16C __m256 operator()(__m256 a, __m256 b) const { return _mm256_add_ps(a, b); }
};
struct VProd {
  ATOLL_F16C __m256 operator()(__m256 a, __m256 b) const { return _mm256_mul_ps(a, b); }
};
struct VMax {
  ATOLL_F16C __m256 operator()(__m256 a, __m256 b) const {
    return _mm256_blendv_ps(_mm256_max_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
};
struct VMin {
  ATOLL_F16C __m256 operator()(__m256 a, __m256 b) const {
    return _mm256_blendv_ps(_mm256_min_ps(a, b), a, _mm256_cmp_ps(a, a, _CMP_UNORD_Q));
  }
};

template <class V, class F>
ATOLL_F16C void binary(Half* d, const Half* a, const Half* b, size_t n, V v, F f) {
  size_t i = 0;
  // Two independent vectors per iteration hide the conversions' latency.
  for (; i + 16 <= n; i += 16) {
    const __m256 x0 = load8(a + i), x1 = load8(a + i + 8);
    const __m256 y0 = load8(b + i), y1 = load8(b + i + 8);
    store8(d + i, v(x0, y0));
    store8(d + i + 8, v(x1, y1));
  }
  for (; i + 8 <= n; i += 8) store8(d + i, v(load8(a + i), load8(b + i)));
  for (; i < n; ++i) d[i] = f(a[i], b[i]);
}

template <class V, class F>
ATOLL_AVX2 void binaryBf(BFloat16* d, const BFloat16* a, const BFloat16* b, size_t n, V v, F f) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) storeBf8(d + i, v(loadBf8(a + i), loadBf8(b + i)));
  for (; i < n; ++i) d[i] = f(a[i], b[i]);
}

}  // namespace

ATOLL_AVX2 void bf16ReduceAvx2(RedOp op, BFloat16* d, const BFloat16* a, const BFloat16* b, size_t n) {
  switch (op) {
    case RedOp::Sum: return binaryBf(d, a, b, n, VSum{}, FuncSum<BFloat16>{});
    case RedOp::Prod: return binaryBf(d, a, b, n, VProd{}, FuncProd<BFloat16>{});
    case RedOp::Max: return binaryBf(d, a, b, n, VMax{}, FuncMax<BFloat16>{});
    case RedOp::Min: return binaryBf(d, a, b, n, VMin{}, FuncMin<BFloat16>{});
  }
}

ATOLL_AVX2 void bf16ScaleAvx2(BFloat16* d, const BFloat16* s, BFloat16 scalar, size_t n) {
  const __m256 k = _mm256_set1_ps(toFloat(scalar));
  const FuncScale<BFloat16> f{scalar};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) storeBf8(d + i, _mm256_mul_ps(loadBf8(s + i), k));
  for (; i < n; ++i) d[i] = f(s[i]);
}

ATOLL_F16C void halfReduceF16c(RedOp op, Half* d, const Half* a, const Half* b, size_t n) {
  switch (op) {
    case RedOp::Sum: return binary(d, a, b, n, VSum{}, FuncSum<Half>{});
    case RedOp::Prod: return binary(d, a, b, n, VProd{}, FuncProd<Half>{});
    case RedOp::Max: return binary(d, a, b, n, VMax{}, FuncMax<Half>{});
    case RedOp::Min: return binary(d, a, b, n, VMin{}, FuncMin<Half>{});
  }
}

ATOLL_F16C void halfScaleF16c(Half* d, const Half* s, Half scalar, size_t n) {
  const __m256 k = _mm256_set1_ps(toFloat(scalar));
  const FuncScale<Half> f{scalar};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) store8(d + i, _mm256_mul_ps(load8(s + i), k));
  for (; i < n; ++i) d[i] = f(s[i]);
}

ATOLL_F16C void halfDivideF16c(Half* d, size_t n, int divisor) {
  const __m256 k = _mm256_set1_ps(static_cast<float>(divisor));
  const FuncDivide<Half> f{divisor};
  size_t i = 0;
  for (; i + 8 <= n; i += 8) store8(d + i, _mm256_div_ps(load8(d + i), k));
  for (; i < n; ++i) d[i] = f(d[i]);
}

}  // namespace atl::kernels::host
