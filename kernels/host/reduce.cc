// Host reduction kernels: type/op dispatch and the baseline and AVX2 instantiations of the loops.
// Both variants live in this one file, selected per call, because compiling a second file with
// -mavx2 would let the linker pick AVX2 copies of shared inline functions for the baseline path.
#include "kernels/host/reduce.h"

#include <libdivide.h>

#include <atomic>
#include <cstring>
#include <type_traits>

#include "base/copy_bytes.h"
#include "kernels/dtype_dispatch.h"
#include "kernels/host/byte_tables.h"
#include "kernels/host/isa.h"
#include "kernels/host/loops.h"

namespace atl::kernels {
namespace {

// flatten pulls the functors into the loop, so each variant vectorises for its own target.
template <class T, class F>
[[gnu::always_inline]] inline void binaryAny(void* d, const void* a, const void* b, size_t n) {
  T* dst = static_cast<T*>(d);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  // In place, dst's lines are read anyway, so streaming would save nothing.
  const bool stream = n * sizeof(T) >= host::kStreamingBytes && d != a && d != b &&
                      reinterpret_cast<uintptr_t>(d) % sizeof(T) == 0;
  if (stream) {
    host::binaryLoopStreaming(dst, x, y, n, F{});
  } else {
    host::binaryLoop(dst, x, y, n, F{});
  }
}
template <class T, class F>
[[gnu::flatten]] void binaryBase(void* d, const void* a, const void* b, size_t n) {
  binaryAny<T, F>(d, a, b, n);
}
template <class T, class F>
[[gnu::target("avx2"), gnu::flatten]] void binaryAvx2(void* d, const void* a, const void* b, size_t n) {
  binaryAny<T, F>(d, a, b, n);
}

template <class T, class F>
[[gnu::flatten]] void unaryBase(T* d, const T* s, size_t n, F f) {
  host::unaryLoop(d, s, n, f);
}
template <class T, class F>
[[gnu::target("avx2"), gnu::flatten]] void unaryAvx2(T* d, const T* s, size_t n, F f) {
  host::unaryLoop(d, s, n, f);
}

// Avg's integer divide by a divisor fixed for the call: a multiply-high and shifts per element
// (libdivide's branch-free form) instead of a hardware divide, which x86 cannot vectorise and
// which costs 10-40 cycles per element. One variant only: GCC vectorises this loop with SSE2 for
// more of the four integer widths than with AVX2, and bench_kernels measured the SSE2 build as
// fast or faster for three of them (perf/baselines/README.md).
template <class T>
[[gnu::flatten]] void divideInvariant(T* d, size_t n, const libdivide::branchfree_divider<T>& div) {
ATOLL_IVDEP
  for (size_t i = 0; i < n; ++i) d[i] = d[i] / div;
}

// A unary op on a 1-byte type as a 256-entry table filled from the functor (byte_tables.h);
// false when the type is wider or the call too small for the table to pay.
template <class T, class F>
bool mapBytes(T* d, const T* s, size_t n, F f) {
  if constexpr (sizeof(T) != 1) {
    return false;
  } else {
    if (n < host::kByteTableMinCount) return false;
    uint8_t table[256];
    for (unsigned v = 0; v < 256; ++v) {
      const uint8_t in = static_cast<uint8_t>(v);
      T x;
      std::memcpy(&x, &in, 1);
      const T r = f(x);
      std::memcpy(&table[v], &r, 1);
    }
    host::byteMap(table, reinterpret_cast<uint8_t*>(d), reinterpret_cast<const uint8_t*>(s), n);
    return true;
  }
}

template <class T, class F>
void unary(T* d, const T* s, size_t n, F f) {
  if (mapBytes(d, s, n, f)) return;
  if (activeIsa() == Isa::Avx2) {
    unaryAvx2(d, s, n, f);
  } else {
    unaryBase(d, s, n, f);
  }
}

using BinaryFn = void (*)(void*, const void*, const void*, size_t);

template <class T>
BinaryFn pickBinary(RedOp op, bool avx2) {
  switch (op) {
    case RedOp::Sum: return avx2 ? &binaryAvx2<T, FuncSum<T>> : &binaryBase<T, FuncSum<T>>;
    case RedOp::Prod: return avx2 ? &binaryAvx2<T, FuncProd<T>> : &binaryBase<T, FuncProd<T>>;
    case RedOp::Max: return avx2 ? &binaryAvx2<T, FuncMax<T>> : &binaryBase<T, FuncMax<T>>;
    case RedOp::Min: return avx2 ? &binaryAvx2<T, FuncMin<T>> : &binaryBase<T, FuncMin<T>>;
  }
  return nullptr;
}

Isa detect() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") ? Isa::Avx2 : Isa::Baseline;
}

bool detectF16c() {
  __builtin_cpu_init();
#if defined(__clang__) && __clang_major__ < 16
  // Clang before 16 does not know "f16c" here; every x86 CPU with AVX2 also has F16C.
  return __builtin_cpu_supports("avx2");
#else
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
#endif
}

std::atomic<uint8_t>& activeSlot() {
  static std::atomic<uint8_t> slot{static_cast<uint8_t>(detectedIsa())};
  return slot;
}

}  // namespace

Isa detectedIsa() {
  static const Isa isa = detect();
  return isa;
}

Isa activeIsa() { return static_cast<Isa>(activeSlot().load(std::memory_order_relaxed)); }

void setIsa(Isa isa) {
  if (static_cast<uint8_t>(isa) > static_cast<uint8_t>(detectedIsa())) isa = detectedIsa();
  activeSlot().store(static_cast<uint8_t>(isa), std::memory_order_relaxed);
}

bool f16cActive() {
  static const bool has = detectF16c();
  return has && activeIsa() == Isa::Avx2;
}

size_t dtypeSize(ncclDataType_t dt) {
  size_t size = 0;
  withType(dt, [&](auto t) { size = sizeof(t); });
  return size;
}

bool isFloating(ncclDataType_t dt) {
  switch (dt) {
    case ncclFloat16:
    case ncclFloat32:
    case ncclFloat64:
    case ncclBfloat16:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return true;
    default: return false;
  }
}

const char* dtypeName(ncclDataType_t dt) {
  switch (dt) {
    case ncclInt8: return "int8";
    case ncclUint8: return "uint8";
    case ncclInt32: return "int32";
    case ncclUint32: return "uint32";
    case ncclInt64: return "int64";
    case ncclUint64: return "uint64";
    case ncclFloat16: return "half";
    case ncclFloat32: return "float";
    case ncclFloat64: return "double";
    case ncclBfloat16: return "bfloat16";
    case ncclFloat8e4m3: return "f8e4m3";
    case ncclFloat8e5m2: return "f8e5m2";
    default: return "invalid";
  }
}

void reduce(ncclDataType_t dt, RedOp op, void* dst, const void* a, const void* b, size_t count) {
  if (count == 0) return;
  const bool avx2 = activeIsa() == Isa::Avx2;
  if (dt == ncclFloat16 && f16cActive()) {
    host::halfReduceF16c(op, static_cast<Half*>(dst), static_cast<const Half*>(a), static_cast<const Half*>(b),
                         count);
    return;
  }
  if (dt == ncclBfloat16 && avx2) {
    host::bf16ReduceAvx2(op, static_cast<BFloat16*>(dst), static_cast<const BFloat16*>(a),
                         static_cast<const BFloat16*>(b), count);
    return;
  }
  if ((dt == ncclFloat8e4m3 || dt == ncclFloat8e5m2) && host::fp8ReduceByTable(dt, op, dst, a, b, count)) return;
  withType(dt, [&](auto t) {
    using T = decltype(t);
    if (BinaryFn fn = pickBinary<T>(op, avx2)) fn(dst, a, b, count);
  });
}

void scale(ncclDataType_t dt, void* dst, const void* src, const void* scalar, size_t count) {
  if (count == 0) return;
  withType(dt, [&](auto t) {
    using T = decltype(t);
    T k;
    std::memcpy(&k, scalar, sizeof(T));
    if constexpr (std::is_same_v<T, Half>) {
      if (f16cActive()) {
        host::halfScaleF16c(static_cast<Half*>(dst), static_cast<const Half*>(src), k, count);
        return;
      }
    }
    if constexpr (std::is_same_v<T, BFloat16>) {
      if (activeIsa() == Isa::Avx2) {
        host::bf16ScaleAvx2(static_cast<BFloat16*>(dst), static_cast<const BFloat16*>(src), k, count);
        return;
      }
    }
    unary(static_cast<T*>(dst), static_cast<const T*>(src), count, FuncScale<T>{k});
  });
}

void divide(ncclDataType_t dt, void* dst, size_t count, int divisor) {
  // Avg divides by a rank count; anything below 1 is a caller bug, and dividing integers by it
  // would trap, so it is refused quietly rather than crashing the process.
  if (count == 0 || divisor < 1) return;
  withType(dt, [&](auto t) {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, Half>) {
      if (f16cActive()) {
        host::halfDivideF16c(static_cast<Half*>(dst), count, divisor);
        return;
      }
    }
    T* d = static_cast<T*>(dst);
    if constexpr (std::is_integral_v<T> && sizeof(T) >= 4) {
      const T by = static_cast<T>(divisor);  // as FuncDivide: the divisor in the element type
      if (by == 1) return;                   // x / 1 (and libdivide's branch-free form excludes 1)
      const libdivide::branchfree_divider<T> div(by);
      divideInvariant(d, count, div);
      return;
    }
    unary(d, d, count, FuncDivide<T>{divisor});
  });
}

void copy(void* dst, const void* src, size_t bytes) {
  if (bytes != 0 && dst != src) copyBytes(dst, src, bytes);
}

}  // namespace atl::kernels
