// Host reduction kernels against straightforward references, run for every SIMD variant the CPU
// offers; plus exhaustive checks of the low-precision conversions in kernels/reduce_functors.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/host/isa.h"
#include "kernels/host/reduce.h"
#include "kernels/reduce_functors.h"

namespace atl::kernels {
namespace {

constexpr ncclDataType_t kAllTypes[] = {ncclInt8,   ncclUint8,   ncclInt32,    ncclUint32,
                                        ncclInt64,  ncclUint64,  ncclFloat16,  ncclFloat32,
                                        ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
constexpr RedOp kAllOps[] = {RedOp::Sum, RedOp::Prod, RedOp::Max, RedOp::Min};
constexpr size_t kCounts[] = {0, 1, 7, 1000003};

template <class Fn>
void withType(ncclDataType_t dt, Fn&& fn) {
  switch (dt) {
    case ncclInt8: return fn(int8_t{});
    case ncclUint8: return fn(uint8_t{});
    case ncclInt32: return fn(int32_t{});
    case ncclUint32: return fn(uint32_t{});
    case ncclInt64: return fn(int64_t{});
    case ncclUint64: return fn(uint64_t{});
    case ncclFloat16: return fn(Half{});
    case ncclFloat32: return fn(float{});
    case ncclFloat64: return fn(double{});
    case ncclBfloat16: return fn(BFloat16{});
    case ncclFloat8e4m3: return fn(Fp8E4M3{});
    case ncclFloat8e5m2: return fn(Fp8E5M2{});
    default: FAIL() << "bad dtype";
  }
}

const char* opName(RedOp op) {
  switch (op) {
    case RedOp::Sum: return "sum";
    case RedOp::Prod: return "prod";
    case RedOp::Max: return "max";
    case RedOp::Min: return "min";
  }
  return "?";
}

// ---- value helpers: every type viewed as a double (exact for all the values used) ----
template <class T>
double asDouble(T v) {
  if constexpr (kIsLowFloat<T>) {
    return toFloat(v);
  } else {
    return static_cast<double>(v);
  }
}
template <class T>
T fromDouble(double d) {
  if constexpr (kIsLowFloat<T>) {
    return fromFloat<T>(static_cast<float>(d));
  } else {
    return static_cast<T>(d);
  }
}
template <class T>
bool sameBits(T x, T y) {
  return std::memcmp(&x, &y, sizeof(T)) == 0;
}
template <class T>
bool isNan(T v) {
  if constexpr (std::is_integral_v<T>) {
    return false;
  } else {
    return std::isnan(asDouble(v));
  }
}

// Largest |input| for which sum (sumRange) and prod (prodRange) of two integers stay exact in T.
template <class T>
int sumRange() {
  if constexpr (std::is_same_v<T, Fp8E5M2>) return 4;
  if constexpr (std::is_same_v<T, Fp8E4M3>) return 8;
  if constexpr (std::is_same_v<T, BFloat16>) return 128;
  if constexpr (std::is_same_v<T, Half>) return 1000;
  return 1 << 20;
}
template <class T>
int prodRange() {
  if constexpr (std::is_same_v<T, Fp8E5M2>) return 2;
  if constexpr (std::is_same_v<T, Fp8E4M3>) return 4;
  if constexpr (std::is_same_v<T, BFloat16>) return 16;
  if constexpr (std::is_same_v<T, Half>) return 45;
  return 1000;
}

// Values are drawn from a small pool so the million-element cases stay fast to generate.
template <class T>
std::vector<T> randomValues(size_t n, RedOp op, std::mt19937_64& rng) {
  std::vector<T> pool(4096);
  if constexpr (std::is_integral_v<T>) {
    for (auto& x : pool) x = static_cast<T>(rng());
  } else {
    const int r = op == RedOp::Prod ? prodRange<T>() : sumRange<T>();
    std::uniform_int_distribution<int> dist(-r, r);
    for (auto& x : pool) x = fromDouble<T>(dist(rng));
  }
  std::vector<T> v(n);
  uint64_t s = rng();
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = pool[(s >> 33) % pool.size()];
  }
  return v;
}

// Reference: integers in 128-bit arithmetic truncated (two's-complement wrap), floats in double
// on inputs chosen so the exact result is representable.
template <class T>
T reference(RedOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using Wide = std::conditional_t<std::is_signed_v<T>, __int128, unsigned __int128>;
    const Wide x = a, y = b;
    switch (op) {
      case RedOp::Sum: return static_cast<T>(x + y);
      case RedOp::Prod: return static_cast<T>(x * y);
      case RedOp::Max: return x > y ? a : b;
      case RedOp::Min: return x < y ? a : b;
    }
  } else {
    const double x = asDouble(a), y = asDouble(b);
    switch (op) {
      case RedOp::Sum: return fromDouble<T>(x + y);
      case RedOp::Prod: return fromDouble<T>(x * y);
      case RedOp::Max: return fromDouble<T>(x > y ? x : y);
      case RedOp::Min: return fromDouble<T>(x < y ? x : y);
    }
  }
  return T{};
}

// ---- kernel tests, parameterised by SIMD variant ----
class KernelTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override {
    if (GetParam() == Isa::Avx2 && detectedIsa() != Isa::Avx2) GTEST_SKIP() << "CPU lacks AVX2";
    setIsa(GetParam());
    ASSERT_EQ(activeIsa(), GetParam());
  }
  void TearDown() override { setIsa(detectedIsa()); }
};

enum class Alias { None, DstIsA, DstIsB };

template <class T>
void checkReduce(ncclDataType_t dt, RedOp op, size_t n, Alias alias, std::mt19937_64& rng) {
  constexpr size_t kGuard = 64;
  const std::vector<T> a0 = randomValues<T>(n, op, rng);
  const std::vector<T> b0 = randomValues<T>(n, op, rng);
  std::vector<T> a = a0, b = b0;
  std::vector<T> out(n + kGuard, fromDouble<T>(1));
  T* dst = alias == Alias::DstIsA ? a.data() : alias == Alias::DstIsB ? b.data() : out.data();
  reduce(dt, op, dst, a.data(), b.data(), n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const T want = reference(op, a0[i], b0[i]);
    if (!sameBits(dst[i], want) && bad++ < 3) {
      ADD_FAILURE() << dtypeName(dt) << " " << opName(op) << " n=" << n << " alias=" << static_cast<int>(alias)
                    << " i=" << i << ": " << asDouble(a0[i]) << " op " << asDouble(b0[i]) << " = "
                    << asDouble(dst[i]) << ", want " << asDouble(want);
    }
  }
  EXPECT_EQ(bad, 0u);
  if (alias == Alias::None) {
    for (size_t i = n; i < n + kGuard; ++i) ASSERT_TRUE(sameBits(out[i], fromDouble<T>(1))) << "wrote past count";
  } else {
    const std::vector<T>& other = alias == Alias::DstIsA ? b : a;
    const std::vector<T>& other0 = alias == Alias::DstIsA ? b0 : a0;
    EXPECT_EQ(std::memcmp(other.data(), other0.data(), n * sizeof(T)), 0) << "source modified";
  }
}

TEST_P(KernelTest, ReduceEveryTypeAndOp) {
  std::mt19937_64 rng(42);
  for (ncclDataType_t dt : kAllTypes) {
    withType(dt, [&](auto t) {
      using T = decltype(t);
      for (RedOp op : kAllOps) {
        for (size_t n : kCounts) checkReduce<T>(dt, op, n, Alias::None, rng);
        for (size_t n : {size_t{1}, size_t{7}, size_t{4099}}) {
          checkReduce<T>(dt, op, n, Alias::DstIsA, rng);
          checkReduce<T>(dt, op, n, Alias::DstIsB, rng);
        }
      }
    });
  }
}

// Out-of-place reduces of large buffers take the streaming-store path; cover it with a dst that is
// not line-aligned and a count that leaves a partial block.
TEST_P(KernelTest, LargeOutOfPlaceWithUnalignedDst) {
  std::mt19937_64 rng(5);
  for (ncclDataType_t dt : {ncclInt8, ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e5m2}) {
    withType(dt, [&](auto t) {
      using T = decltype(t);
      const size_t n = (size_t{5} << 20) / sizeof(T) + 4099;
      const std::vector<T> a = randomValues<T>(n, RedOp::Sum, rng);
      const std::vector<T> b = randomValues<T>(n, RedOp::Sum, rng);
      std::vector<T> out(n + 3);
      T* dst = out.data() + 3;
      reduce(dt, RedOp::Sum, dst, a.data(), b.data(), n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_TRUE(sameBits(dst[i], reference(RedOp::Sum, a[i], b[i]))) << dtypeName(dt) << " i=" << i;
      }
    });
  }
}

// Arbitrary bit patterns (NaN, inf, subnormals, overflow): the vector loops must agree with the
// scalar functors bit for bit, NaNs only up to payload since operand order may differ.
template <class T, class F>
void checkAgainstFunctor(ncclDataType_t dt, RedOp op, F f, std::mt19937_64& rng) {
  const size_t n = 4099;
  std::vector<T> a(n), b(n), d(n);
  for (size_t i = 0; i < n; ++i) {
    const uint64_t x = rng(), y = rng();
    std::memcpy(&a[i], &x, sizeof(T));
    std::memcpy(&b[i], &y, sizeof(T));
  }
  reduce(dt, op, d.data(), a.data(), b.data(), n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const T want = f(a[i], b[i]);
    const bool ok = sameBits(d[i], want) || (isNan(d[i]) && isNan(want));
    if (!ok && bad++ < 3) {
      ADD_FAILURE() << dtypeName(dt) << " " << opName(op) << " i=" << i << ": " << asDouble(a[i]) << ", "
                    << asDouble(b[i]) << " -> " << asDouble(d[i]) << " want " << asDouble(want);
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST_P(KernelTest, ArbitraryBitsMatchScalarFunctors) {
  std::mt19937_64 rng(7);
  for (ncclDataType_t dt : kAllTypes) {
    withType(dt, [&](auto t) {
      using T = decltype(t);
      checkAgainstFunctor<T>(dt, RedOp::Sum, FuncSum<T>{}, rng);
      checkAgainstFunctor<T>(dt, RedOp::Prod, FuncProd<T>{}, rng);
      checkAgainstFunctor<T>(dt, RedOp::Max, FuncMax<T>{}, rng);
      checkAgainstFunctor<T>(dt, RedOp::Min, FuncMin<T>{}, rng);
    });
  }
}

TEST_P(KernelTest, MaxMinPropagateNan) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> a = {nan, 1.f, nan, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f}, b = {1.f, nan, nan, 1.f, 9.f, 4.f, 5.f, 6.f, nan};
  std::vector<float> d(a.size());
  for (RedOp op : {RedOp::Max, RedOp::Min}) {
    reduce(ncclFloat32, op, d.data(), a.data(), b.data(), a.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(std::isnan(d[i]), std::isnan(a[i]) || std::isnan(b[i])) << i;
  }
}

TEST_P(KernelTest, ScaleEveryType) {
  std::mt19937_64 rng(3);
  for (ncclDataType_t dt : kAllTypes) {
    withType(dt, [&](auto t) {
      using T = decltype(t);
      for (size_t n : kCounts) {
        const std::vector<T> src = randomValues<T>(n, RedOp::Prod, rng);
        const T k = std::is_integral_v<T> ? static_cast<T>(rng()) : fromDouble<T>(-3);
        std::vector<T> out(n), inplace = src;
        scale(dt, out.data(), src.data(), &k, n);
        scale(dt, inplace.data(), inplace.data(), &k, n);
        for (size_t i = 0; i < n; ++i) {
          const T want = reference(RedOp::Prod, src[i], k);
          ASSERT_TRUE(sameBits(out[i], want)) << dtypeName(dt) << " i=" << i << " " << asDouble(out[i]);
          ASSERT_TRUE(sameBits(inplace[i], want)) << dtypeName(dt) << " in place i=" << i;
        }
      }
    });
  }
  int8_t v[2] = {100, -100}, k = 3;  // wraps: 300 -> 44, -300 -> -44
  scale(ncclInt8, v, v, &k, 2);
  EXPECT_EQ(v[0], 44);
  EXPECT_EQ(v[1], -44);
}

TEST_P(KernelTest, DivideIntegersTruncateTowardZero) {
  std::vector<int32_t> s = {7, -7, 1, -1, 6, -6, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
  divide(ncclInt32, s.data(), s.size(), 2);
  EXPECT_EQ(s, (std::vector<int32_t>{3, -3, 0, 0, 3, -3, -1073741824, 1073741823}));
  std::vector<int8_t> s8 = {-128, 127, -5, 5, -3, 3, 0, -1, 1};
  divide(ncclInt8, s8.data(), s8.size(), 3);
  EXPECT_EQ(s8, (std::vector<int8_t>{-42, 42, -1, 1, -1, 1, 0, 0, 0}));
  std::vector<uint8_t> u8 = {255, 7, 2, 0};
  divide(ncclUint8, u8.data(), u8.size(), 2);
  EXPECT_EQ(u8, (std::vector<uint8_t>{127, 3, 1, 0}));
  std::vector<uint32_t> u32 = {0xffffffffu, 10, 9};
  divide(ncclUint32, u32.data(), u32.size(), 3);
  EXPECT_EQ(u32, (std::vector<uint32_t>{0x55555555u, 3, 3}));
  std::vector<int64_t> s64 = {std::numeric_limits<int64_t>::min(), -10, 10};
  divide(ncclInt64, s64.data(), s64.size(), 4);
  EXPECT_EQ(s64, (std::vector<int64_t>{std::numeric_limits<int64_t>::min() / 4, -2, 2}));
  std::vector<uint64_t> u64 = {~0ull, 5};
  divide(ncclUint64, u64.data(), u64.size(), 4);
  EXPECT_EQ(u64, (std::vector<uint64_t>{~0ull / 4, 1}));
  // A divisor below 1 is refused and leaves the data alone rather than trapping.
  divide(ncclInt32, s.data(), s.size(), 0);
  EXPECT_EQ(s[0], 3);
}

TEST_P(KernelTest, DivideFloatsRoundOnce) {
  std::vector<double> d(1001, 1.0);
  divide(ncclFloat64, d.data(), d.size(), 3);
  for (double x : d) ASSERT_EQ(x, 1.0 / 3.0);
  std::vector<float> f(1001, 2.0f);
  divide(ncclFloat32, f.data(), f.size(), 7);
  for (float x : f) ASSERT_EQ(x, 2.0f / 7.0f);
  // Low-precision: every bit pattern divided, compared with the functor (exact division in float,
  // one rounding), which in turn is checked against double arithmetic for non-NaN values.
  std::vector<Half> h(65536);
  for (uint32_t i = 0; i < 65536; ++i) h[i].bits = static_cast<uint16_t>(i);
  std::vector<Half> h0 = h;
  divide(ncclFloat16, h.data(), h.size(), 6);
  for (uint32_t i = 0; i < 65536; ++i) {
    const Half want = halfFromFloat(static_cast<float>(static_cast<double>(toFloat(h0[i])) / 6.0));
    ASSERT_TRUE(sameBits(h[i], want) || (isNan(h[i]) && isNan(want))) << "half 0x" << std::hex << i;
  }
  std::vector<Fp8E4M3> e(256);
  for (uint32_t i = 0; i < 256; ++i) e[i].bits = static_cast<uint8_t>(i);
  divide(ncclFloat8e4m3, e.data(), e.size(), 2);
  for (uint32_t i = 0; i < 256; ++i) {
    const Fp8E4M3 want = e4m3FromFloat(toFloat(Fp8E4M3{static_cast<uint8_t>(i)}) / 2.0f);
    ASSERT_TRUE(sameBits(e[i], want)) << "e4m3 0x" << std::hex << i;
  }
}

// fp8 reductions by table (kernels/host/byte_tables.h): every pair of bit patterns, every op, in
// a call large enough to build the table and in small calls (scalar until a table exists, the
// table once it does); each result must have exactly the functor's bits, NaNs included.
template <class T, class F>
void checkEveryPair(ncclDataType_t dt, RedOp op, F f) {
  std::vector<T> a(65536), b(65536), d(65536);
  for (uint32_t i = 0; i < 65536; ++i) {
    a[i].bits = static_cast<uint8_t>(i >> 8);
    b[i].bits = static_cast<uint8_t>(i);
  }
  for (size_t n : {size_t{65536}, size_t{13}}) {
    reduce(dt, op, d.data(), a.data(), b.data(), n);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(d[i].bits, f(a[i], b[i]).bits) << dtypeName(dt) << " " << opName(op) << " n=" << n << " 0x" << std::hex
                                               << int{a[i].bits} << " 0x" << int{b[i].bits};
  }
  std::vector<T> inPlace = a;  // dst aliasing a source
  reduce(dt, op, inPlace.data(), inPlace.data(), b.data(), inPlace.size());
  for (size_t i = 0; i < inPlace.size(); ++i) ASSERT_EQ(inPlace[i].bits, f(a[i], b[i]).bits) << "in place " << i;
}

TEST_P(KernelTest, Fp8EveryPairMatchesFunctors) {
  checkEveryPair<Fp8E4M3>(ncclFloat8e4m3, RedOp::Sum, FuncSum<Fp8E4M3>{});
  checkEveryPair<Fp8E4M3>(ncclFloat8e4m3, RedOp::Prod, FuncProd<Fp8E4M3>{});
  checkEveryPair<Fp8E4M3>(ncclFloat8e4m3, RedOp::Max, FuncMax<Fp8E4M3>{});
  checkEveryPair<Fp8E4M3>(ncclFloat8e4m3, RedOp::Min, FuncMin<Fp8E4M3>{});
  checkEveryPair<Fp8E5M2>(ncclFloat8e5m2, RedOp::Sum, FuncSum<Fp8E5M2>{});
  checkEveryPair<Fp8E5M2>(ncclFloat8e5m2, RedOp::Prod, FuncProd<Fp8E5M2>{});
  checkEveryPair<Fp8E5M2>(ncclFloat8e5m2, RedOp::Max, FuncMax<Fp8E5M2>{});
  checkEveryPair<Fp8E5M2>(ncclFloat8e5m2, RedOp::Min, FuncMin<Fp8E5M2>{});
}

// Integer avg by multiplication (libdivide) and 1-byte types by table: every result equals C's
// truncating division, for divisors that are 1, powers of two, odd, large and near the type's
// limit, on the type's extremes and random values, in calls above and below the table threshold.
template <class T>
void checkIntegerDivide(ncclDataType_t dt, std::mt19937_64& rng) {
  std::vector<T> values = {std::numeric_limits<T>::min(), std::numeric_limits<T>::max(), T(0), T(1), T(-1), T(2), T(-2)};
  while (values.size() < 4099) values.push_back(static_cast<T>(rng()));
  for (int divisor : {1, 2, 3, 5, 7, 8, 10, 64, 127, 1000, 65537, std::numeric_limits<int>::max()}) {
    for (size_t n : {values.size(), size_t{7}}) {
      std::vector<T> d(values.begin(), values.begin() + static_cast<ptrdiff_t>(n));
      divide(dt, d.data(), n, divisor);
      for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(d[i], FuncDivide<T>{divisor}(values[i])) << dtypeName(dt) << " " << +values[i] << " / " << divisor;
    }
  }
}

TEST_P(KernelTest, IntegerDivideMatchesCDivision) {
  std::mt19937_64 rng(11);
  checkIntegerDivide<int8_t>(ncclInt8, rng);
  checkIntegerDivide<uint8_t>(ncclUint8, rng);
  checkIntegerDivide<int32_t>(ncclInt32, rng);
  checkIntegerDivide<uint32_t>(ncclUint32, rng);
  checkIntegerDivide<int64_t>(ncclInt64, rng);
  checkIntegerDivide<uint64_t>(ncclUint64, rng);
}

// fp8 scale and divide by table: every bit pattern, repeated past the table threshold.
TEST_P(KernelTest, Fp8ScaleAndDivideByTable) {
  std::vector<Fp8E5M2> s(4096), d(4096);
  for (size_t i = 0; i < s.size(); ++i) s[i].bits = static_cast<uint8_t>(i);
  const Fp8E5M2 k{0x3d};  // 1.25
  scale(ncclFloat8e5m2, d.data(), s.data(), &k, s.size());
  for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(d[i].bits, FuncScale<Fp8E5M2>{k}(s[i]).bits) << i;
  std::vector<Fp8E4M3> e(4096);
  for (size_t i = 0; i < e.size(); ++i) e[i].bits = static_cast<uint8_t>(i * 7);
  std::vector<Fp8E4M3> e0 = e;
  divide(ncclFloat8e4m3, e.data(), e.size(), 3);
  for (size_t i = 0; i < e.size(); ++i) ASSERT_EQ(e[i].bits, FuncDivide<Fp8E4M3>{3}(e0[i]).bits) << i;
}

std::string isaName(const ::testing::TestParamInfo<Isa>& info) {
  return info.param == Isa::Avx2 ? "Avx2" : "Baseline";
}
INSTANTIATE_TEST_SUITE_P(Isa, KernelTest, ::testing::Values(Isa::Baseline, Isa::Avx2), isaName);

// ---- type metadata ----
TEST(KernelTypes, SizesNamesFloating) {
  const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  for (int i = 0; i < ncclNumTypes; ++i) {
    const auto dt = static_cast<ncclDataType_t>(i);
    EXPECT_EQ(dtypeSize(dt), sizes[i]) << i;
    EXPECT_EQ(isFloating(dt), i >= ncclFloat16) << i;
    EXPECT_STRNE(dtypeName(dt), "invalid") << i;
  }
  EXPECT_EQ(dtypeSize(static_cast<ncclDataType_t>(ncclNumTypes)), 0u);
  EXPECT_FALSE(isFloating(static_cast<ncclDataType_t>(-1)));
  EXPECT_STREQ(dtypeName(static_cast<ncclDataType_t>(99)), "invalid");
  EXPECT_STREQ(dtypeName(ncclBfloat16), "bfloat16");
}

TEST(KernelTypes, CopyAndInvalidTypeAreSafe) {
  std::vector<uint8_t> a(1000), b(1000, 0);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(i * 7);
  copy(b.data(), a.data(), a.size());
  EXPECT_EQ(a, b);
  copy(b.data(), b.data(), b.size());
  EXPECT_EQ(a, b);
  reduce(static_cast<ncclDataType_t>(ncclNumTypes), RedOp::Sum, b.data(), a.data(), a.data(), 10);
  EXPECT_EQ(a, b);
}

}  // namespace

// gtest finds this by argument-dependent lookup, which skips the anonymous namespace.
void PrintTo(Isa isa, std::ostream* os) { *os << (isa == Isa::Avx2 ? "Avx2" : "Baseline"); }

}  // namespace atl::kernels
