#include "transports/transport.h"

#include <algorithm>

#include "base/copy_bytes.h"

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
    copyBytes(static_cast<std::byte*>(dst) + got, view.data(), take);
    consume(take);
    got += take;
  }
  return got;
}

Result<size_t> Connection::readOffered(void*, size_t, size_t) {
  return ATOLL_ERROR(ncclInternalError, "%s: single-copy read on a link that never offers", describe().c_str());
}
Result<std::span<const std::byte>> Connection::viewOffered(size_t, size_t) {
  return ATOLL_ERROR(ncclInternalError, "%s: single-copy view on a link that never offers", describe().c_str());
}
Status Connection::finishOffered() {
  return ATOLL_ERROR(ncclInternalError, "%s: single-copy finish on a link that never offers", describe().c_str());
}

void encodePeerInfo(codec::Writer& w, const PeerInfo& p) {
  w.i32(p.rank);
  w.i32(p.pid);
  w.u64(p.hostHash);
  w.i32(p.cudaDev);
  w.u32(p.flags);
  w.text(p.hostname, sizeof(p.hostname));
  const net::PackedAddr a = net::pack(p.dataAddr);
  w.u16(a.family);
  w.u16(a.port);  // already in network order: kept as the bytes it is
  w.bytes(a.addr);
  w.bytes(p.dataChallenge);
  w.text(p.netName, sizeof(p.netName));
  w.bytes(p.netHandle);
}

PeerInfo decodePeerInfo(codec::Reader& r) {
  PeerInfo p;
  p.rank = r.i32();
  p.pid = r.i32();
  p.hostHash = r.u64();
  p.cudaDev = r.i32();
  p.flags = r.u32();
  r.text(p.hostname, sizeof(p.hostname));
  net::PackedAddr a{};
  a.family = r.u16();
  a.port = r.u16();
  r.bytes(a.addr);
  p.dataAddr = net::unpack(a);
  r.bytes(p.dataChallenge);
  r.text(p.netName, sizeof(p.netName));
  r.bytes(p.netHandle);
  return p;
}

}  // namespace atl::transport
