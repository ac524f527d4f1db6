// Which SIMD variant of the host kernels runs. The library is built for baseline x86-64 and picks
// AVX2 (+F16C) loops at run time, so one binary is fast on new CPUs and still runs on old ones.
#pragma once

#include <cstdint>

namespace atl::kernels {

enum class Isa : uint8_t { Baseline = 0, Avx2 = 1 };

/// Best variant this CPU can run (AVX2 requires OS support for the YMM state).
Isa detectedIsa();
/// Variant the kernels use now.
Isa activeIsa();
/// Tests force Baseline to cover both code paths; a request above detectedIsa() is clamped.
void setIsa(Isa isa);
/// True when the half-precision loops may use F16C conversions (implies AVX2 active).
bool f16cActive();

}  // namespace atl::kernels
