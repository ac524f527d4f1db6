// Datatype codecs and exact input generation for the collective correctness driver.
//
// The test deliberately carries its own half/bfloat16/fp8 routines so a bug in the library's
// conversions cannot hide itself by being used on both sides of the comparison.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "nccl.h"

namespace collcheck {

struct TypeInfo {
  ncclDataType_t dt;
  const char* name;
  size_t size;
  bool isFloat;
  bool isSigned;
  // Every integer of magnitude <= exactLimit is representable, so sums bounded by it are exact.
  double exactLimit;
  // log2 of the largest power of two whose partial products stay exact (prod inputs are +-1, +-2).
  int prodBits;
  // Explicit mantissa bits: the relative rounding unit for the avg tolerance.
  int mantBits;
};

inline const TypeInfo kTypes[ncclNumTypes] = {
    {ncclInt8, "int8", 1, false, true, 127, 6, 0},
    {ncclUint8, "uint8", 1, false, false, 255, 7, 0},
    {ncclInt32, "int32", 4, false, true, 1 << 20, 20, 0},
    {ncclUint32, "uint32", 4, false, false, 1 << 20, 20, 0},
    {ncclInt64, "int64", 8, false, true, 1 << 20, 20, 0},
    {ncclUint64, "uint64", 8, false, false, 1 << 20, 20, 0},
    {ncclFloat16, "half", 2, true, true, 2048, 14, 10},
    {ncclFloat32, "float", 4, true, true, 1 << 20, 20, 23},
    {ncclFloat64, "double", 8, true, true, 1 << 20, 20, 52},
    {ncclBfloat16, "bf16", 2, true, true, 256, 20, 7},
    {ncclFloat8e4m3, "e4m3", 1, true, true, 16, 8, 3},
    {ncclFloat8e5m2, "e5m2", 1, true, true, 8, 14, 2},
};

inline const TypeInfo& typeInfo(ncclDataType_t dt) { return kTypes[static_cast<int>(dt)]; }

// A binary minifloat: 1 sign bit, E exponent bits, M mantissa bits. `ieee` means the all-ones
// exponent encodes inf/NaN (half, e5m2); OCP e4m3 instead keeps it for normals except S.1111.111.
struct MiniFloat {
  int E, M, bias;
  bool ieee;
};
inline constexpr MiniFloat kHalf{5, 10, 15, true};
inline constexpr MiniFloat kE4M3{4, 3, 7, false};
inline constexpr MiniFloat kE5M2{5, 2, 15, true};

inline double miniDecode(uint32_t bits, MiniFloat f) {
  const uint32_t sign = (bits >> (f.E + f.M)) & 1u;
  const uint32_t emax = (1u << f.E) - 1;
  const uint32_t e = (bits >> f.M) & emax;
  const uint32_t m = bits & ((1u << f.M) - 1);
  double v;
  if (f.ieee && e == emax) {
    v = m ? NAN : INFINITY;
  } else if (!f.ieee && e == emax && m == (1u << f.M) - 1) {
    v = NAN;
  } else if (e == 0) {
    v = std::ldexp(static_cast<double>(m), 1 - f.bias - f.M);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(m), -f.M), static_cast<int>(e) - f.bias);
  }
  return sign ? -v : v;
}

// Encodes a value that must be exactly representable; anything else is a bug in the test itself.
inline uint32_t miniEncodeExact(double v, MiniFloat f) {
  const uint32_t sign = std::signbit(v) ? 1u : 0u;
  const double a = std::fabs(v);
  uint32_t e = 0, m = 0;
  if (a != 0) {
    int ex = 0;
    std::frexp(a, &ex);  // a = frac * 2^ex, frac in [0.5, 1)
    int be = ex - 1 + f.bias;
    double mant;
    if (be >= 1) {
      mant = (std::ldexp(a, -(ex - 1)) - 1.0) * std::ldexp(1.0, f.M);
    } else {
      be = 0;
      mant = std::ldexp(a, f.bias - 1 + f.M);
    }
    if (mant != std::floor(mant) || be >= (1 << f.E) || (f.ieee && be == (1 << f.E) - 1)) {
      std::fprintf(stderr, "coll_check: internal error: %g not exact in minifloat\n", v);
      std::abort();
    }
    e = static_cast<uint32_t>(be);
    m = static_cast<uint32_t>(mant);
  }
  return (sign << (f.E + f.M)) | (e << f.M) | m;
}

inline double decode(ncclDataType_t dt, const void* p) {
  switch (dt) {
    case ncclInt8: { int8_t v; std::memcpy(&v, p, 1); return v; }
    case ncclUint8: { uint8_t v; std::memcpy(&v, p, 1); return v; }
    case ncclInt32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case ncclUint32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    case ncclInt64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case ncclUint64: { uint64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case ncclFloat16: { uint16_t v; std::memcpy(&v, p, 2); return miniDecode(v, kHalf); }
    case ncclFloat32: { float v; std::memcpy(&v, p, 4); return v; }
    case ncclFloat64: { double v; std::memcpy(&v, p, 8); return v; }
    case ncclBfloat16: {
      uint16_t v; std::memcpy(&v, p, 2);
      uint32_t w = static_cast<uint32_t>(v) << 16; float f; std::memcpy(&f, &w, 4); return f;
    }
    case ncclFloat8e4m3: { uint8_t v; std::memcpy(&v, p, 1); return miniDecode(v, kE4M3); }
    case ncclFloat8e5m2: { uint8_t v; std::memcpy(&v, p, 1); return miniDecode(v, kE5M2); }
    default: return NAN;
  }
}

inline void encodeExact(ncclDataType_t dt, double v, void* p) {
  switch (dt) {
    case ncclInt8: { int8_t x = static_cast<int8_t>(v); std::memcpy(p, &x, 1); break; }
    case ncclUint8: { uint8_t x = static_cast<uint8_t>(v); std::memcpy(p, &x, 1); break; }
    case ncclInt32: { int32_t x = static_cast<int32_t>(v); std::memcpy(p, &x, 4); break; }
    case ncclUint32: { uint32_t x = static_cast<uint32_t>(v); std::memcpy(p, &x, 4); break; }
    case ncclInt64: { int64_t x = static_cast<int64_t>(v); std::memcpy(p, &x, 8); break; }
    case ncclUint64: { uint64_t x = static_cast<uint64_t>(v); std::memcpy(p, &x, 8); break; }
    case ncclFloat16: { uint16_t x = static_cast<uint16_t>(miniEncodeExact(v, kHalf)); std::memcpy(p, &x, 2); break; }
    case ncclFloat32: { float x = static_cast<float>(v); std::memcpy(p, &x, 4); break; }
    case ncclFloat64: std::memcpy(p, &v, 8); break;
    case ncclBfloat16: {
      float f = static_cast<float>(v); uint32_t w; std::memcpy(&w, &f, 4);
      if ((w & 0xffffu) != 0 || static_cast<double>(f) != v) {
        std::fprintf(stderr, "coll_check: internal error: %g not exact in bf16\n", v);
        std::abort();
      }
      uint16_t x = static_cast<uint16_t>(w >> 16); std::memcpy(p, &x, 2); break;
    }
    case ncclFloat8e4m3: { uint8_t x = static_cast<uint8_t>(miniEncodeExact(v, kE4M3)); std::memcpy(p, &x, 1); break; }
    case ncclFloat8e5m2: { uint8_t x = static_cast<uint8_t>(miniEncodeExact(v, kE5M2)); std::memcpy(p, &x, 1); break; }
    default: break;
  }
}

inline uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
inline uint64_t hash3(uint64_t a, uint64_t b, uint64_t c) { return mix(mix(mix(a) ^ b) ^ c); }

// Reduction operators as the test names them; kPreMul is ncclRedOpCreatePreMulSum.
enum Op { kSum = 0, kProd, kMax, kMin, kAvg, kPreMul, kNumOps };
inline const char* kOpNames[kNumOps] = {"sum", "prod", "max", "min", "avg", "premulsum"};

// Per-rank PreMulSum scalar: small integers so products stay exact; negative only for signed types.
inline double preMulScalar(const TypeInfo& t, int rank) {
  if (t.isSigned && rank % 4 == 3) return -1;
  return rank % 4 == 0 ? 2 : 1;
}

// Chooses reduction inputs so that the exact result (and every partial result in any reduction
// order) is representable in the datatype. For sums the budget `exactLimit` is split over the
// ranks' weights; when it is too small (fp8 with many ranks) only ranks of one parity contribute
// to a given index, halving the weight.
class ReduceInputs {
 public:
  ReduceInputs(const TypeInfo& t, Op op, int nranks, uint64_t seed) : t_(t), op_(op), n_(nranks), seed_(seed) {
    if (op == kSum || op == kAvg || op == kPreMul) {
      double w[2] = {0, 0}, total = 0;
      for (int r = 0; r < n_; ++r) {
        double wr = op == kPreMul ? std::fabs(preMulScalar(t, r)) : 1;
        w[r % 2] += wr;
        total += wr;
      }
      if (total <= t.exactLimit) {
        mag_ = std::floor(t.exactLimit / total);
      } else {
        sparse_ = true;
        mag_ = std::floor(t.exactLimit / std::max(w[0], w[1]));
      }
    } else if (op == kMax || op == kMin) {
      mag_ = std::min(t.exactLimit, 100.0);
    }
    if (mag_ > 1000) mag_ = 1000;
  }

  double value(int rank, size_t index) const {
    const uint64_t h = hash3(seed_, static_cast<uint64_t>(rank), index);
    if (op_ == kProd) {
      double v = (rank < t_.prodBits && (h & 1)) ? 2 : 1;
      if (t_.isSigned && (h & 6) == 6) v = -v;
      return v;
    }
    if (sparse_ && static_cast<size_t>(rank % 2) != index % 2) return 0;
    const uint64_t m = static_cast<uint64_t>(mag_);
    if (!t_.isSigned) return static_cast<double>((h >> 8) % (m + 1));
    return static_cast<double>((h >> 8) % (2 * m + 1)) - static_cast<double>(m);
  }

  // Expected result for one index given all ranks' inputs (computed on demand).
  double expected(size_t index) const {
    double acc = 0;
    for (int r = 0; r < n_; ++r) {
      const double v = value(r, index);
      switch (op_) {
        case kSum: case kAvg: acc = r == 0 ? v : acc + v; break;
        case kPreMul: acc += preMulScalar(t_, r) * v; break;
        case kProd: acc = r == 0 ? v : acc * v; break;
        case kMax: acc = r == 0 ? v : std::max(acc, v); break;
        case kMin: acc = r == 0 ? v : std::min(acc, v); break;
        default: break;
      }
    }
    if (op_ == kAvg) {
      if (!t_.isFloat) return static_cast<double>(static_cast<int64_t>(acc) / n_);  // truncates toward 0
      return acc / n_;
    }
    return acc;
  }

  bool matches(double got, double want) const {
    if (op_ != kAvg || !t_.isFloat) return got == want;
    const double tol = std::ldexp(1.0, -t_.mantBits) * (n_ + 1) * (mag_ + std::fabs(want));
    return std::fabs(got - want) <= tol;
  }

 private:
  const TypeInfo& t_;
  Op op_;
  int n_;
  uint64_t seed_;
  bool sparse_ = false;
  double mag_ = 0;
};

// Data-movement collectives are checked bitwise: each element is a hash of (source rank, index).
inline void movementBytes(uint64_t seed, int rank, size_t index, size_t elemSize, unsigned char* out) {
  uint64_t h = hash3(seed ^ 0x5a5a, static_cast<uint64_t>(rank), index);
  std::memcpy(out, &h, elemSize);
}

inline std::string formatElem(ncclDataType_t dt, const unsigned char* p) {
  char buf[96];
  const size_t sz = typeInfo(dt).size;
  unsigned long long raw = 0;
  std::memcpy(&raw, p, sz);
  const TypeInfo& t = typeInfo(dt);
  if (t.isFloat) {
    std::snprintf(buf, sizeof buf, "%.17g (0x%0*llx)", decode(dt, p), static_cast<int>(2 * sz), raw);
  } else if (t.isSigned) {
    const int shift = static_cast<int>(64 - 8 * sz);  // sign-extend the low sz bytes
    const long long v = static_cast<long long>(raw << shift) >> shift;
    std::snprintf(buf, sizeof buf, "%lld (0x%0*llx)", v, static_cast<int>(2 * sz), raw);
  } else {
    std::snprintf(buf, sizeof buf, "%llu (0x%0*llx)", raw, static_cast<int>(2 * sz), raw);
  }
  return buf;
}

}  // namespace collcheck
