// Element loops of the host kernels, instantiated once per ISA variant by the .cc files.
// always_inline so that each target-specific caller vectorises the body for its own ISA; the
// callee (default target) is a subset of the caller's, which lets GCC inline it.
#pragma once

#include <cstddef>

#include "kernels/host/reduce.h"
#include "kernels/reduce_functors.h"

namespace atl::kernels::host {

// ivdep: the contract allows dst to alias a source exactly but never partially, so no iteration
// reads what an earlier one wrote. Without it GCC adds an overlap check that sends the common
// in-place case (dst == a) down the scalar loop.
template <class T, class F>
[[gnu::always_inline]] inline void binaryLoop(T* d, const T* a, const T* b, size_t n, F f) {
#pragma GCC ivdep
  for (size_t i = 0; i < n; ++i) d[i] = f(a[i], b[i]);
}

template <class T, class F>
[[gnu::always_inline]] inline void unaryLoop(T* d, const T* s, size_t n, F f) {
#pragma GCC ivdep
  for (size_t i = 0; i < n; ++i) d[i] = f(s[i]);
}

/// F16C variants for Half (half_f16c.cc); only called when f16cActive().
void halfReduceF16c(RedOp op, Half* d, const Half* a, const Half* b, size_t n);
void halfScaleF16c(Half* d, const Half* s, Half scalar, size_t n);
void halfDivideF16c(Half* d, size_t n, int divisor);

}  // namespace atl::kernels::host
