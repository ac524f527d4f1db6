#include "perf/common/values.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace atl::perf {
namespace {

// Value range kept well inside double precision even after summing over many ranks.
constexpr double kPatternCap = 1 << 20;

constexpr TypeInfo kTypes[] = {
    {ncclInt8, "int8", 1, false, true, 127, 6, 0},
    {ncclUint8, "uint8", 1, false, false, 255, 7, 0},
    {ncclInt32, "int32", 4, false, true, 2147483647.0, 30, 0},
    {ncclUint32, "uint32", 4, false, false, 4294967295.0, 31, 0},
    {ncclInt64, "int64", 8, false, true, 9.2e18, 62, 0},
    {ncclUint64, "uint64", 8, false, false, 1.8e19, 63, 0},
    {ncclFloat16, "half", 2, true, true, 2048, 15, 10},
    {ncclFloat32, "float", 4, true, true, 16777216.0, 100, 23},
    {ncclFloat64, "double", 8, true, true, 9007199254740992.0, 1000, 52},
    {ncclBfloat16, "bfloat16", 2, true, true, 256, 100, 7},
    {ncclFloat8e4m3, "f8e4m3", 1, true, true, 16, 8, 3},
    {ncclFloat8e5m2, "f8e5m2", 1, true, true, 8, 15, 2},
};

struct Alias {
  const char* name;
  ncclDataType_t type;
};
constexpr Alias kAliases[] = {
    {"char", ncclInt8},           {"int", ncclInt32},       {"float16", ncclFloat16},     {"fp16", ncclFloat16},
    {"float32", ncclFloat32},     {"fp32", ncclFloat32},    {"float64", ncclFloat64},     {"fp64", ncclFloat64},
    {"bf16", ncclBfloat16},       {"e4m3", ncclFloat8e4m3}, {"fp8_e4m3", ncclFloat8e4m3}, {"e5m2", ncclFloat8e5m2},
    {"fp8_e5m2", ncclFloat8e5m2},
};

struct MiniFloat {
  int expBits;
  int mantBits;
  bool finiteOnly;  // e4m3 "fn": no infinities, only the all-ones pattern is NaN
};

MiniFloat miniFloat(ncclDataType_t type) {
  switch (type) {
    case ncclFloat16:
      return {5, 10, false};
    case ncclBfloat16:
      return {8, 7, false};
    case ncclFloat8e4m3:
      return {4, 3, true};
    default:
      return {5, 2, false};
  }
}

uint32_t encodeMini(MiniFloat f, double v) {
  const int bias = (1 << (f.expBits - 1)) - 1;
  uint32_t sign = std::signbit(v) ? 1u : 0u;
  uint32_t signBit = sign << (f.expBits + f.mantBits);
  double a = std::fabs(v);
  if (std::isnan(v)) return signBit | (((1u << f.expBits) - 1) << f.mantBits) | ((1u << f.mantBits) - 1);
  if (a == 0) return signBit;
  int e = 0;
  std::frexp(a, &e);
  int exponent = e - 1;  // a = 1.m * 2^exponent
  if (exponent + bias <= 0) {
    // Subnormal: the integer mantissa counts units of the smallest subnormal; a carry into the
    // exponent field produces the smallest normal number, which is the right encoding.
    return signBit | static_cast<uint32_t>(std::nearbyint(std::ldexp(a, bias - 1 + f.mantBits)));
  }
  double scaled = std::nearbyint(std::ldexp(a, f.mantBits - exponent));  // in [2^m, 2^(m+1)]
  uint32_t mant = static_cast<uint32_t>(scaled) - (1u << f.mantBits);
  if (mant == (1u << f.mantBits)) {
    mant = 0;
    ++exponent;
  }
  return signBit | (static_cast<uint32_t>(exponent + bias) << f.mantBits) | mant;
}

double decodeMini(MiniFloat f, uint32_t bits) {
  const int bias = (1 << (f.expBits - 1)) - 1;
  const uint32_t expMax = (1u << f.expBits) - 1;
  uint32_t mant = bits & ((1u << f.mantBits) - 1);
  uint32_t exp = (bits >> f.mantBits) & expMax;
  bool negative = (bits >> (f.expBits + f.mantBits)) & 1u;
  double v = 0;
  if (f.finiteOnly && exp == expMax && mant == (1u << f.mantBits) - 1) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (!f.finiteOnly && exp == expMax) {
    v = mant == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), 1 - bias - f.mantBits);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -f.mantBits), static_cast<int>(exp) - bias);
  }
  return negative ? -v : v;
}

template <class T>
void store(void* dst, size_t index, T v) {
  std::memcpy(static_cast<char*>(dst) + index * sizeof(T), &v, sizeof(T));
}

template <class T>
T load(const void* src, size_t index) {
  T v;
  std::memcpy(&v, static_cast<const char*>(src) + index * sizeof(T), sizeof(T));
  return v;
}

uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::span<const TypeInfo> allTypes() { return kTypes; }

const TypeInfo& typeInfo(ncclDataType_t type) {
  for (const TypeInfo& t : kTypes)
    if (t.type == type) return t;
  return kTypes[7];
}

bool parseTypeName(std::string_view name, ncclDataType_t* out) {
  for (const TypeInfo& t : kTypes) {
    if (name == t.name) return *out = t.type, true;
  }
  for (const Alias& a : kAliases) {
    if (name == a.name) return *out = a.type, true;
  }
  return false;
}

void encode(ncclDataType_t type, double v, void* dst, size_t index) {
  switch (type) {
    case ncclInt8:
      return store(dst, index, static_cast<int8_t>(v));
    case ncclUint8:
      return store(dst, index, static_cast<uint8_t>(v));
    case ncclInt32:
      return store(dst, index, static_cast<int32_t>(v));
    case ncclUint32:
      return store(dst, index, static_cast<uint32_t>(v));
    case ncclInt64:
      return store(dst, index, static_cast<int64_t>(v));
    case ncclUint64:
      return store(dst, index, static_cast<uint64_t>(v));
    case ncclFloat32:
      return store(dst, index, static_cast<float>(v));
    case ncclFloat64:
      return store(dst, index, v);
    case ncclFloat16:
    case ncclBfloat16:
      return store(dst, index, static_cast<uint16_t>(encodeMini(miniFloat(type), v)));
    default:
      return store(dst, index, static_cast<uint8_t>(encodeMini(miniFloat(type), v)));
  }
}

double decode(ncclDataType_t type, const void* src, size_t index) {
  switch (type) {
    case ncclInt8:
      return load<int8_t>(src, index);
    case ncclUint8:
      return load<uint8_t>(src, index);
    case ncclInt32:
      return load<int32_t>(src, index);
    case ncclUint32:
      return load<uint32_t>(src, index);
    case ncclInt64:
      return static_cast<double>(load<int64_t>(src, index));
    case ncclUint64:
      return static_cast<double>(load<uint64_t>(src, index));
    case ncclFloat32:
      return load<float>(src, index);
    case ncclFloat64:
      return load<double>(src, index);
    case ncclFloat16:
    case ncclBfloat16:
      return decodeMini(miniFloat(type), load<uint16_t>(src, index));
    default:
      return decodeMini(miniFloat(type), load<uint8_t>(src, index));
  }
}

Combine combineFor(bool reduces, ncclRedOp_t op) {
  if (!reduces) return Combine::Copy;
  switch (op) {
    case ncclSum:
      return Combine::Sum;
    case ncclProd:
      return Combine::Prod;
    case ncclMin:
      return Combine::Min;
    case ncclMax:
      return Combine::Max;
    default:
      return Combine::Avg;
  }
}

Pattern::Pattern(ncclDataType_t type, Combine combine, int nranks)
    : type_(type), info_(typeInfo(type)), combine_(combine), nranks_(std::max(nranks, 1)) {
  const double limit = std::min(info_.exactLimit, kPatternCap);
  if (combine_ == Combine::Sum || combine_ == Combine::Avg) {
    // At most `contributors` non-zero terms of magnitude <= range_ per element: every partial sum
    // stays an integer within `limit`, whatever the order.
    stride_ = static_cast<int>(std::ceil(nranks_ / limit));
    int contributors = (nranks_ + stride_ - 1) / stride_;
    range_ = std::max<int64_t>(1, static_cast<int64_t>(limit / contributors));
  } else if (combine_ == Combine::Prod) {
    // Factors are +-1 or +-2 with at most maxPow2 twos per element: products are exact powers of two.
    const int twos = std::min(info_.maxPow2, 16);
    stride_ = (nranks_ + twos - 1) / twos;
    range_ = 2;
  } else {
    range_ = static_cast<int64_t>(limit);
  }
}

double Pattern::input(int rank, size_t index) const {
  uint64_t h = mix((static_cast<uint64_t>(rank) << 44) ^ index ^ (static_cast<uint64_t>(type_) << 40));
  const bool contributes = ((static_cast<uint64_t>(rank) + index) % static_cast<uint64_t>(stride_)) == 0;
  if (combine_ == Combine::Prod) {
    double v = (contributes && (h & 1)) ? 2.0 : 1.0;
    if (info_.isSigned && (h >> 1) % 4 == 0) v = -v;
    return v;
  }
  if (!contributes) return 0.0;
  const uint64_t r = static_cast<uint64_t>(range_);
  if (info_.isSigned) return static_cast<double>(static_cast<int64_t>((h >> 8) % (2 * r + 1)) - range_);
  return static_cast<double>((h >> 8) % (r + 1));
}

double Pattern::reduced(size_t index) const {
  double acc = input(0, index);
  for (int r = 1; r < nranks_; ++r) {
    double v = input(r, index);
    switch (combine_) {
      case Combine::Sum:
      case Combine::Avg:
        acc += v;
        break;
      case Combine::Prod:
        acc *= v;
        break;
      case Combine::Min:
        acc = std::min(acc, v);
        break;
      case Combine::Max:
        acc = std::max(acc, v);
        break;
      case Combine::Copy:
        break;
    }
  }
  if (combine_ == Combine::Avg) acc = info_.isFloat ? acc / nranks_ : std::trunc(acc / nranks_);
  return acc;
}

bool Pattern::matches(double got, double expected) const {
  if (got == expected) return true;
  if (combine_ != Combine::Avg || !info_.isFloat || std::isnan(got)) return false;
  // The library may divide before or after summing, each step rounding to the datatype.
  const double eps = std::ldexp(1.0, -info_.mantissaBits);
  const double tolerance = 2.0 * (nranks_ + 1) * eps * static_cast<double>(range_) + eps;
  return std::fabs(got - expected) <= tolerance;
}

void Pattern::fill(int rank, void* dst, size_t count) const {
  for (size_t i = 0; i < count; ++i) encode(type_, input(rank, i), dst, i);
}

}  // namespace atl::perf
