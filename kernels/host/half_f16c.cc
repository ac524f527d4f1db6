// Half-precision loops using F16C conversions (8 lanes per instruction). The generic loop cannot
// vectorise the scalar binary16 rounding, which is branchy; F16C does it in hardware with the same
// round-to-nearest-even and the same NaN quieting as kernels/reduce_functors.h.
#include <immintrin.h>

#include "kernels/host/loops.h"

#define ATOLL_F16C [[gnu::target("avx2,f16c")]]

namespace atl::kernels::host {
namespace {

ATOLL_F16C inline __m256 load8(const Half* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
ATOLL_F16C inline void store8(Half* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
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
  for (; i + 8 <= n; i += 8) store8(d + i, v(load8(a + i), load8(b + i)));
  for (; i < n; ++i) d[i] = f(a[i], b[i]);
}

}  // namespace

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
