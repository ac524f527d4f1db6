// Conversions of kernels/reduce_functors.h: exhaustive decode/round-trip of every half, bfloat16
// and fp8 pattern against ldexp-based references, ties-to-even and saturation cases, and encode
// against independent nearest-value searches (and x86 F16C hardware for half).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/reduce_functors.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace atl::kernels {
namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Value of a small float from its fields, written from the format definition (not from the code
// under test). ieeeTop: all-ones exponent means inf/NaN; else only all-ones bits mean NaN.
double referenceDecode(uint32_t v, int expBits, int manBits, bool ieeeTop) {
  const int bias = (1 << (expBits - 1)) - 1;
  const bool neg = (v >> (expBits + manBits)) & 1u;
  const uint32_t e = (v >> manBits) & ((1u << expBits) - 1);
  const uint32_t m = v & ((1u << manBits) - 1);
  const uint32_t eMax = (1u << expBits) - 1;
  double mag;
  if (ieeeTop && e == eMax) {
    mag = m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (!ieeeTop && e == eMax && m == (1u << manBits) - 1) {
    mag = std::numeric_limits<double>::quiet_NaN();
  } else if (e == 0) {
    mag = std::ldexp(static_cast<double>(m), 1 - bias - manBits);
  } else {
    mag = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -manBits), static_cast<int>(e) - bias);
  }
  return neg ? -mag : mag;
}

void expectSameValue(double got, double want, uint32_t pattern) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << std::hex << pattern;
  } else {
    EXPECT_EQ(got, want) << std::hex << pattern;
    EXPECT_EQ(std::signbit(got), std::signbit(want)) << std::hex << pattern;
  }
}

TEST(Conversions, HalfExhaustive) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const float f = toFloat(Half{static_cast<uint16_t>(i)});
    expectSameValue(f, referenceDecode(i, 5, 10, true), i);
    const uint16_t back = halfFromFloat(f).bits;
    if (std::isnan(f)) {
      EXPECT_EQ(back, i | 0x200u) << std::hex << i << ": NaN keeps sign and payload, becomes quiet";
    } else {
      EXPECT_EQ(back, i) << std::hex << i;
    }
  }
}

TEST(Conversions, Bf16Exhaustive) {
  for (uint32_t i = 0; i < 65536; ++i) {
    const float f = toFloat(BFloat16{static_cast<uint16_t>(i)});
    expectSameValue(f, referenceDecode(i, 8, 7, true), i);
    const uint16_t back = bf16FromFloat(f).bits;
    EXPECT_EQ(back, std::isnan(f) ? (i | 0x40u) : i) << std::hex << i;
  }
}

TEST(Conversions, Fp8Exhaustive) {
  int e4Nans = 0, e5Nans = 0, e5Infs = 0;
  for (uint32_t i = 0; i < 256; ++i) {
    const float a = toFloat(Fp8E4M3{static_cast<uint8_t>(i)});
    expectSameValue(a, referenceDecode(i, 4, 3, false), i);
    e4Nans += std::isnan(a);
    EXPECT_EQ(e4m3FromFloat(a).bits, i) << std::hex << i;  // the only NaN pattern is 0x7f/0xff
    const float b = toFloat(Fp8E5M2{static_cast<uint8_t>(i)});
    expectSameValue(b, referenceDecode(i, 5, 2, true), i);
    e5Nans += std::isnan(b);
    e5Infs += std::isinf(b);
    // Round trip is exact except that NaNs become quiet and infinities saturate.
    const uint32_t want = std::isnan(b) ? (i | 0x02u) : std::isinf(b) ? (i & 0x80u) | 0x7bu : i;
    EXPECT_EQ(e5m2FromFloat(b).bits, want) << std::hex << i;
  }
  EXPECT_EQ(e4Nans, 2);
  EXPECT_EQ(e5Nans, 6);
  EXPECT_EQ(e5Infs, 2);
  EXPECT_EQ(toFloat(Fp8E4M3{0x7e}), 448.0f);
  EXPECT_EQ(toFloat(Fp8E4M3{0x01}), std::ldexp(1.0f, -9));
  EXPECT_EQ(toFloat(Fp8E5M2{0x7b}), 57344.0f);
  EXPECT_EQ(toFloat(Fp8E5M2{0x01}), std::ldexp(1.0f, -16));
}

TEST(Conversions, TiesToEven) {
  const float one = 1.0f;
  // half: ulp(1) = 2^-10
  EXPECT_EQ(halfFromFloat(one + std::ldexp(1.0f, -11)).bits, 0x3c00);      // tie, 1.0 is even
  EXPECT_EQ(halfFromFloat(one + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);  // tie, rounds up to even
  EXPECT_EQ(halfFromFloat(std::nextafter(one + std::ldexp(1.0f, -11), 2.0f)).bits, 0x3c01);
  EXPECT_EQ(halfFromFloat(std::ldexp(1.0f, -25)).bits, 0x0000);      // half the min subnormal: to zero
  EXPECT_EQ(halfFromFloat(3 * std::ldexp(1.0f, -25)).bits, 0x0002);  // 1.5 min subnormal: to 2
  EXPECT_EQ(halfFromFloat(-std::ldexp(1.0f, -26)).bits, 0x8000);
  EXPECT_EQ(halfFromFloat(std::ldexp(1023.5f, -24)).bits, 0x0400);  // subnormal rounding into min normal
  EXPECT_EQ(halfFromFloat(65519.0f).bits, 0x7bff);
  EXPECT_EQ(halfFromFloat(65520.0f).bits, 0x7c00);  // tie at the top rounds to even = inf
  EXPECT_EQ(halfFromFloat(1e6f).bits, 0x7c00);
  EXPECT_EQ(halfFromFloat(-std::numeric_limits<float>::infinity()).bits, 0xfc00);
  // bfloat16: ulp(1) = 2^-7
  EXPECT_EQ(bf16FromFloat(one + std::ldexp(1.0f, -8)).bits, 0x3f80);
  EXPECT_EQ(bf16FromFloat(one + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);
  EXPECT_EQ(bf16FromFloat(std::numeric_limits<float>::max()).bits, 0x7f80);  // IEEE overflow
  // e4m3: ulp(1) = 1/8
  EXPECT_EQ(e4m3FromFloat(1.0625f).bits, 0x38);
  EXPECT_EQ(e4m3FromFloat(1.1875f).bits, 0x3a);
  EXPECT_EQ(e4m3FromFloat(std::ldexp(1.0f, -10)).bits, 0x00);      // tie with 0
  EXPECT_EQ(e4m3FromFloat(3 * std::ldexp(1.0f, -10)).bits, 0x02);  // tie, to even
  // e5m2: ulp(1) = 1/4
  EXPECT_EQ(e5m2FromFloat(1.125f).bits, 0x3c);
  EXPECT_EQ(e5m2FromFloat(1.375f).bits, 0x3e);
  EXPECT_EQ(e5m2FromFloat(-1.375f).bits, 0xbe);
}

TEST(Conversions, Fp8Saturates) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(e4m3FromFloat(448.0f).bits, 0x7e);
  EXPECT_EQ(e4m3FromFloat(460.0f).bits, 0x7e);
  EXPECT_EQ(e4m3FromFloat(464.0f).bits, 0x7e);  // halfway to the NaN slot: still max
  EXPECT_EQ(e4m3FromFloat(1000.0f).bits, 0x7e);
  EXPECT_EQ(e4m3FromFloat(-1e30f).bits, 0xfe);
  EXPECT_EQ(e4m3FromFloat(inf).bits, 0x7e);
  EXPECT_EQ(e4m3FromFloat(-inf).bits, 0xfe);
  EXPECT_EQ(e4m3FromFloat(nan).bits, 0x7f);
  EXPECT_EQ(e4m3FromFloat(-nan).bits, 0xff);
  EXPECT_EQ(e5m2FromFloat(57344.0f).bits, 0x7b);
  EXPECT_EQ(e5m2FromFloat(61440.0f).bits, 0x7b);
  EXPECT_EQ(e5m2FromFloat(1e9f).bits, 0x7b);
  EXPECT_EQ(e5m2FromFloat(inf).bits, 0x7b);
  EXPECT_EQ(e5m2FromFloat(-inf).bits, 0xfb);
  EXPECT_TRUE(std::isnan(toFloat(e5m2FromFloat(nan))));
  // Reductions saturate too: 448 + 448 in e4m3 stays 448, not NaN.
  EXPECT_EQ(FuncSum<Fp8E4M3>{}(Fp8E4M3{0x7e}, Fp8E4M3{0x7e}).bits, 0x7e);
  EXPECT_EQ(FuncProd<Fp8E5M2>{}(Fp8E5M2{0x7b}, Fp8E5M2{0x7b}).bits, 0x7b);
}

// Nearest value among all finite patterns of an 8-bit format, ties to the even pattern, with the
// format's overflow rule applied beyond the largest finite value.
template <class T>
uint8_t nearestFp8(float f, double maxFinite) {
  if (std::isnan(f)) return 0;  // not used
  if (std::fabs(f) > maxFinite) return fromFloat<T>(std::copysign(maxFinite, f)).bits;
  int best = -1;
  double bestErr = 0;
  for (int i = 0; i < 256; ++i) {
    const double v = toFloat(T{static_cast<uint8_t>(i)});
    if (!std::isfinite(v) || std::signbit(v) != std::signbit(f)) continue;
    const double err = std::fabs(v - f);
    if (best < 0 || err < bestErr || (err == bestErr && (i & 1) == 0)) {
      best = i;
      bestErr = err;
    }
  }
  return static_cast<uint8_t>(best);
}

TEST(Conversions, Fp8EncodeMatchesNearestSearch) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> mant(-2.0f, 2.0f);
  std::uniform_int_distribution<int> ex(-20, 18);
  for (int k = 0; k < 20000; ++k) {
    const float f = std::ldexp(mant(rng), ex(rng));
    ASSERT_EQ(e4m3FromFloat(f).bits, nearestFp8<Fp8E4M3>(f, 448.0)) << f;
    ASSERT_EQ(e5m2FromFloat(f).bits, nearestFp8<Fp8E5M2>(f, 57344.0)) << f;
  }
}

TEST(Conversions, Bf16EncodeMatchesNearest) {
  std::mt19937 rng(5);
  for (int k = 0; k < 200000; ++k) {
    const uint32_t u = rng();
    const float f = floatOf(u);
    if (std::isnan(f) || std::isinf(f)) continue;
    const uint32_t lo = u >> 16;
    const double dlo = toFloat(BFloat16{static_cast<uint16_t>(lo)});
    // Next magnitude up; past the largest finite value IEEE rounds as if 2^128 were representable.
    double dhi = toFloat(BFloat16{static_cast<uint16_t>(lo + 1)});
    if (std::isinf(dhi)) dhi = std::copysign(std::ldexp(1.0, 128), dhi);
    const double elo = std::fabs(f - dlo), ehi = std::fabs(dhi - f);
    const uint32_t want = (elo < ehi || (elo == ehi && (lo & 1) == 0)) ? lo : lo + 1;
    ASSERT_EQ(bf16FromFloat(f).bits, want) << std::hex << u;
  }
}

#if defined(__x86_64__)
[[gnu::target("f16c")]] uint16_t hardwareHalf(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

TEST(Conversions, HalfEncodeMatchesF16cHardware) {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "no F16C";
  std::mt19937 rng(9);
  // Random bit patterns, then a dense sweep of the subnormal/normal boundary.
  for (int k = 0; k < 1000000; ++k) {
    const float f = floatOf(rng());
    ASSERT_EQ(halfFromFloat(f).bits, hardwareHalf(f)) << std::hex << bitsOf(f);
  }
  for (uint32_t u = bitsOf(std::ldexp(1.0f, -26)); u < bitsOf(std::ldexp(1.0f, -13)); u += 97) {
    ASSERT_EQ(halfFromFloat(floatOf(u)).bits, hardwareHalf(floatOf(u))) << std::hex << u;
  }
}
#endif

}  // namespace
}  // namespace atl::kernels
