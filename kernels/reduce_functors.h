// Element math for every NCCL datatype and reduction, shared verbatim by the host kernels and the
// CUDA kernels so that CPU tests cover the arithmetic the GPU runs.
//
// Low-precision floats (half, bfloat16, fp8) are plain storage structs; every operation converts to
// float, computes there and rounds back once (round-to-nearest-even), which is what NVIDIA's
// hardware does for these types and keeps results identical across host and device.
//
// fp8 saturation: a finite value beyond the largest finite fp8 (and +-inf) becomes +-max finite,
// like CUDA's __nv_cvt_float_to_fp8(..., __NV_SATFINITE, ...). Reductions of large fp8 values would
// otherwise turn into inf (e5m2) or NaN (e4m3 has no inf), which is never what a training job wants.
// NaN stays NaN. half and bfloat16 follow IEEE (overflow rounds to inf).
//
// NaN encodings produced by rounding: half and bfloat16 keep the top payload bits and set the quiet
// bit (what x86 F16C and most hardware do, so the scalar and SIMD host paths agree bit for bit);
// e4m3 produces sign|0x7f (its only NaN); e5m2 keeps the top payload bits, quiet bit set.
#pragma once

#include <cstdint>
#include <type_traits>

#if defined(__CUDACC__)
#define ATOLL_HOST_DEVICE __host__ __device__
#else
#define ATOLL_HOST_DEVICE
#endif

#if !defined(__CUDA_ARCH__)
#include <cstring>
#endif

namespace atl::kernels {

/// IEEE 754 binary16.
struct Half {
  uint16_t bits;
};
/// bfloat16: the top half of a binary32.
struct BFloat16 {
  uint16_t bits;
};
/// OCP fp8 E4M3FN: bias 7, no infinities, max 448, NaN = 0x7f / 0xff.
struct Fp8E4M3 {
  uint8_t bits;
};
/// OCP fp8 E5M2: bias 15, IEEE-like (inf 0x7c, NaN 0x7d..0x7f), max finite 57344.
struct Fp8E5M2 {
  uint8_t bits;
};

static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2 && sizeof(Fp8E4M3) == 1 && sizeof(Fp8E5M2) == 1);
static_assert(std::is_trivially_copyable_v<Half> && std::is_trivially_copyable_v<Fp8E4M3>);

namespace detail {

ATOLL_HOST_DEVICE inline uint32_t floatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
#endif
}

ATOLL_HOST_DEVICE inline float bitsFloat(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
#endif
}

/// Layout of a small binary float: kExp exponent bits, kMan mantissa bits, bias 2^(kExp-1)-1.
/// kIeeeTop: the all-ones exponent encodes inf/NaN (half, e5m2); otherwise only the all-ones
/// pattern is NaN (e4m3). kSaturate: overflow clamps to max finite instead of becoming inf.
template <int kExp, int kMan, bool kIeeeTop, bool kSaturate>
struct SmallFloat {
  static constexpr int kBias = (1 << (kExp - 1)) - 1;
  static constexpr uint32_t kSignBit = 1u << (kExp + kMan);
  static constexpr uint32_t kExpMask = ((1u << kExp) - 1) << kMan;
  static constexpr uint32_t kManMask = (1u << kMan) - 1;
  static constexpr uint32_t kInf = kExpMask;
  static constexpr uint32_t kMaxFinite = kIeeeTop ? kExpMask - 1 : kExpMask | (kManMask - 1);
  static constexpr uint32_t kQuiet = 1u << (kMan - 1);

  ATOLL_HOST_DEVICE static float decode(uint32_t v) {
    const uint32_t sign = (v & kSignBit) << (31 - kExp - kMan);
    const uint32_t e = (v & kExpMask) >> kMan;
    const uint32_t m = v & kManMask;
    if (e == (kExpMask >> kMan) && (kIeeeTop || m == kManMask)) {
      // inf/NaN: keep the payload where binary32 can hold it.
      const uint32_t payload = kIeeeTop ? m << (23 - kMan) : 0x400000u;
      return bitsFloat(sign | 0x7f800000u | payload);
    }
    if (e == 0) {
      // Subnormal: m * 2^(1 - bias - kMan), exact in binary32.
      const float scale = bitsFloat(static_cast<uint32_t>(127 + 1 - kBias - kMan) << 23);
      const float mag = static_cast<float>(m) * scale;
      return bitsFloat(sign | floatBits(mag));
    }
    return bitsFloat(sign | ((e - kBias + 127) << 23) | (m << (23 - kMan)));
  }

  ATOLL_HOST_DEVICE static uint32_t encode(float f) {
    const uint32_t u = floatBits(f);
    const uint32_t sign = (u >> 31) ? kSignBit : 0u;
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) {
      if constexpr (kIeeeTop) return sign | kInf | kQuiet | ((a >> (23 - kMan)) & kManMask);
      return sign | kExpMask | kManMask;
    }
    // binary32 zeros and subnormals are far below half the smallest target subnormal.
    if (a < 0x00800000u) return sign;
    const int e = static_cast<int>(a >> 23) - 127 + kBias;  // target biased exponent
    const uint32_t sig = (a & 0x7fffffu) | 0x800000u;       // 24-bit significand
    int shift = 23 - kMan + (e < 1 ? 1 - e : 0);
    if (shift > 25) shift = 25;  // everything shifted out; 25 still rounds correctly to zero
    uint32_t q = sig >> shift;
    const uint32_t rem = sig & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
    // q carries the implicit bit at position kMan, so adding it lets a rounding carry bump the
    // exponent; for subnormals (e < 1) q alone is the encoding, including the step to min normal.
    uint32_t r = e >= 1 ? (static_cast<uint32_t>(e - 1) << kMan) + q : q;
    if (r > kMaxFinite) r = kSaturate ? kMaxFinite : kInf;
    return sign | r;
  }
};

using HalfFmt = SmallFloat<5, 10, true, false>;
using E4M3Fmt = SmallFloat<4, 3, false, true>;
using E5M2Fmt = SmallFloat<5, 2, true, true>;

}  // namespace detail

ATOLL_HOST_DEVICE inline float toFloat(Half x) { return detail::HalfFmt::decode(x.bits); }
ATOLL_HOST_DEVICE inline float toFloat(BFloat16 x) { return detail::bitsFloat(static_cast<uint32_t>(x.bits) << 16); }
ATOLL_HOST_DEVICE inline float toFloat(Fp8E4M3 x) { return detail::E4M3Fmt::decode(x.bits); }
ATOLL_HOST_DEVICE inline float toFloat(Fp8E5M2 x) { return detail::E5M2Fmt::decode(x.bits); }

ATOLL_HOST_DEVICE inline Half halfFromFloat(float f) { return Half{static_cast<uint16_t>(detail::HalfFmt::encode(f))}; }
ATOLL_HOST_DEVICE inline BFloat16 bf16FromFloat(float f) {
  const uint32_t u = detail::floatBits(f);
  // Written without branches that have side effects so the host compiler can vectorise it.
  const uint32_t nan = (u >> 16) | 0x40u;
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  return BFloat16{static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded)};
}
ATOLL_HOST_DEVICE inline Fp8E4M3 e4m3FromFloat(float f) { return Fp8E4M3{static_cast<uint8_t>(detail::E4M3Fmt::encode(f))}; }
ATOLL_HOST_DEVICE inline Fp8E5M2 e5m2FromFloat(float f) { return Fp8E5M2{static_cast<uint8_t>(detail::E5M2Fmt::encode(f))}; }

/// True for the storage-only float types that compute in float.
template <class T>
inline constexpr bool kIsLowFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                                    std::is_same_v<T, Fp8E4M3> || std::is_same_v<T, Fp8E5M2>;

/// Rounds a float to T (one of the low-precision types).
template <class T>
ATOLL_HOST_DEVICE inline T fromFloat(float f) {
  if constexpr (std::is_same_v<T, Half>) {
    return halfFromFloat(f);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return bf16FromFloat(f);
  } else if constexpr (std::is_same_v<T, Fp8E4M3>) {
    return e4m3FromFloat(f);
  } else {
    static_assert(std::is_same_v<T, Fp8E5M2>, "fromFloat: not a low-precision float type");
    return e5m2FromFloat(f);
  }
}

namespace detail {
// Signed integer overflow is undefined behaviour; NCCL semantics are two's-complement wrap, so
// integers add and multiply in their unsigned type.
template <class T, bool = std::is_integral_v<T>>
struct Wrap {
  using type = T;
};
template <class T>
struct Wrap<T, true> {
  using type = std::make_unsigned_t<T>;
};
template <class T>
using WrapT = typename Wrap<T>::type;

// NaN-propagating max/min (IEEE 754-2019 maximum/minimum, except that -0/+0 are not ordered).
template <class C>
ATOLL_HOST_DEVICE inline C maxOf(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return a != a ? a : (a > b ? a : b);
  } else {
    return a > b ? a : b;
  }
}
template <class C>
ATOLL_HOST_DEVICE inline C minOf(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return a != a ? a : (a < b ? a : b);
  } else {
    return a < b ? a : b;
  }
}
}  // namespace detail

template <class T>
struct FuncSum {
  ATOLL_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (kIsLowFloat<T>) {
      return fromFloat<T>(toFloat(a) + toFloat(b));
    } else {
      using W = detail::WrapT<T>;
      return static_cast<T>(static_cast<W>(a) + static_cast<W>(b));
    }
  }
};

template <class T>
struct FuncProd {
  ATOLL_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (kIsLowFloat<T>) {
      return fromFloat<T>(toFloat(a) * toFloat(b));
    } else {
      using W = detail::WrapT<T>;
      return static_cast<T>(static_cast<W>(a) * static_cast<W>(b));
    }
  }
};

template <class T>
struct FuncMax {
  ATOLL_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (kIsLowFloat<T>) {
      return fromFloat<T>(detail::maxOf(toFloat(a), toFloat(b)));
    } else {
      return detail::maxOf(a, b);
    }
  }
};

template <class T>
struct FuncMin {
  ATOLL_HOST_DEVICE T operator()(T a, T b) const {
    if constexpr (kIsLowFloat<T>) {
      return fromFloat<T>(detail::minOf(toFloat(a), toFloat(b)));
    } else {
      return detail::minOf(a, b);
    }
  }
};

/// x * scalar (PreMulSum's pre-multiplication; the scalar has the buffer's type, as in NCCL).
template <class T>
struct FuncScale {
  T scalar;
  ATOLL_HOST_DEVICE T operator()(T x) const { return FuncProd<T>{}(x, scalar); }
};

/// x / divisor for ncclAvg's final step. Integers truncate toward zero (C++ division); floats
/// divide exactly in their compute type and round once. The caller guarantees divisor >= 1.
template <class T>
struct FuncDivide {
  int divisor;
  ATOLL_HOST_DEVICE T operator()(T x) const {
    if constexpr (kIsLowFloat<T>) {
      return fromFloat<T>(toFloat(x) / static_cast<float>(divisor));
    } else {
      return static_cast<T>(x / static_cast<T>(divisor));
    }
  }
};

}  // namespace atl::kernels
