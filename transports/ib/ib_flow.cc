#include "transports/ib/ib_flow.h"

#include <algorithm>

namespace atl::net::ib {

std::optional<FifoSlot> FifoReader::take(const volatile FifoSlot* fifo) {
  const volatile FifoSlot& s = fifo[next_ % kFifoDepth];
  // The sequence is written with the rest of the slot in one RDMA write; the fence keeps the
  // fields' reads after the sequence's.
  if (s.seq != next_ + 1) return std::nullopt;
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  FifoSlot out{s.addr, s.rkey, s.size, s.tag, 0, s.seq};
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
