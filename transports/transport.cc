#include "transports/transport.h"

#include <algorithm>
#include <cstring>

namespace atl::transport {

Result<size_t> Connection::receiveInto(void* dst, size_t n) {
  size_t got = 0;
  // Twice: a ring hands out at most two contiguous pieces before it wraps.
  for (int piece = 0; piece < 2 && got < n; ++piece) {
    Result<std::span<const std::byte>> next = peek();
    if (!next.ok()) {
      if (got > 0) break;  // deliver what was taken; the error comes back on the next call
      return next.status();
    }
    std::span<const std::byte> view = *next;
    if (view.empty()) break;
    const size_t take = std::min(view.size(), n - got);
    std::memcpy(static_cast<std::byte*>(dst) + got, view.data(), take);
    consume(take);
    got += take;
  }
  return got;
}

}  // namespace atl::transport
