#include "kernels/host/byte_tables.h"

#include <array>
#include <atomic>
#include <memory>
#include <mutex>

#include "kernels/reduce_functors.h"

namespace atl::kernels::host {
namespace {

using PairTable = std::array<uint8_t, 65536>;

template <class T, class F>
std::unique_ptr<PairTable> buildPairTable() {
  auto table = std::make_unique<PairTable>();
  const F f{};
  for (uint32_t a = 0; a < 256; ++a)
    for (uint32_t b = 0; b < 256; ++b) {
      const T r = f(T{static_cast<uint8_t>(a)}, T{static_cast<uint8_t>(b)});
      (*table)[(a << 8) | b] = r.bits;
    }
  return table;
}

/// One table per (type, op), built at most once and then kept for the process's life (64 KiB each,
/// 512 KiB if every fp8 reduction is used).
template <class T, class F>
const uint8_t* pairTable(bool build) {
  static std::atomic<const uint8_t*> ready{nullptr};
  static std::once_flag once;
  static std::unique_ptr<PairTable> owned;
  const uint8_t* t = ready.load(std::memory_order_acquire);
  if (t != nullptr || !build) return t;
  std::call_once(once, [] {
    owned = buildPairTable<T, F>();
    ready.store(owned->data(), std::memory_order_release);
  });
  return ready.load(std::memory_order_acquire);
}

template <class T>
const uint8_t* tableFor(RedOp op, bool build) {
  switch (op) {
    case RedOp::Sum: return pairTable<T, FuncSum<T>>(build);
    case RedOp::Prod: return pairTable<T, FuncProd<T>>(build);
    case RedOp::Max: return pairTable<T, FuncMax<T>>(build);
    case RedOp::Min: return pairTable<T, FuncMin<T>>(build);
  }
  return nullptr;
}

}  // namespace

bool fp8ReduceByTable(ncclDataType_t dt, RedOp op, void* dst, const void* a, const void* b, size_t count) {
  const bool build = count >= kByteTableMinCount;
  const uint8_t* t = dt == ncclFloat8e4m3   ? tableFor<Fp8E4M3>(op, build)
                     : dt == ncclFloat8e5m2 ? tableFor<Fp8E5M2>(op, build)
                                            : nullptr;
  if (t == nullptr) return false;
  auto* d = static_cast<uint8_t*>(dst);
  const auto* x = static_cast<const uint8_t*>(a);
  const auto* y = static_cast<const uint8_t*>(b);
  // Four independent lookups per iteration keep several table loads in flight (the table is in
  // L2, not L1). dst may alias a or b exactly: each element is read before it is written.
  size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const uint8_t r0 = t[(uint32_t{x[i]} << 8) | y[i]];
    const uint8_t r1 = t[(uint32_t{x[i + 1]} << 8) | y[i + 1]];
    const uint8_t r2 = t[(uint32_t{x[i + 2]} << 8) | y[i + 2]];
    const uint8_t r3 = t[(uint32_t{x[i + 3]} << 8) | y[i + 3]];
    d[i] = r0, d[i + 1] = r1, d[i + 2] = r2, d[i + 3] = r3;
  }
  for (; i < count; ++i) d[i] = t[(uint32_t{x[i]} << 8) | y[i]];
  return true;
}

void byteMap(const uint8_t (&table)[256], uint8_t* dst, const uint8_t* src, size_t count) {
  size_t i = 0;
  for (; i + 4 <= count; i += 4) {
    const uint8_t r0 = table[src[i]], r1 = table[src[i + 1]], r2 = table[src[i + 2]], r3 = table[src[i + 3]];
    dst[i] = r0, dst[i + 1] = r1, dst[i + 2] = r2, dst[i + 3] = r3;
  }
  for (; i < count; ++i) dst[i] = table[src[i]];
}

}  // namespace atl::kernels::host
