#include "transports/ib/ib_flow.h"

#include <algorithm>

namespace atl::net::ib {

std::optional<FifoSlot> FifoReader::take(const FifoSlot* fifo) {
  const FifoSlot& s = fifo[next_ % kFifoDepth];
  // The NIC writes the slot behind the compiler's back: the sequence is read with an acquire load
  // (never cached in a register, and the fields are read after it), the rest once it matches.
  if (__atomic_load_n(&s.seq, __ATOMIC_ACQUIRE) != next_ + 1) return std::nullopt;
  FifoSlot out{__atomic_load_n(&s.addr, __ATOMIC_RELAXED), __atomic_load_n(&s.rkey, __ATOMIC_RELAXED),
               __atomic_load_n(&s.size, __ATOMIC_RELAXED), __atomic_load_n(&s.tag, __ATOMIC_RELAXED), 0, next_ + 1};
  ++next_;
  return out;
}

std::vector<Chunk> splitAcrossQps(size_t size, int nqps, size_t align) {
  nqps = std::max(nqps, 1);
  align = std::max<size_t>(align, 1);
  size_t per = (size + static_cast<size_t>(nqps) - 1) / static_cast<size_t>(nqps);
  per = (per + align - 1) / align * align;
  std::vector<Chunk> out;
  size_t offset = 0;
  for (int q = 0; q < nqps; ++q) {
    const size_t len = std::min(per, size - offset);
    out.push_back({q, offset, len});
    offset += len;
  }
  return out;
}

}  // namespace atl::net::ib
