#include "transports/ib/ib_wire.h"

#include "base/wire_codec.h"

namespace atl::net::ib {
namespace {

constexpr uint32_t kMagic = 0x49424e54;  // "IBNT"
constexpr uint16_t kVersion = 1;

}  // namespace

std::vector<std::byte> encodeConnInfo(const ConnInfo& c) {
  codec::Writer w;
  w.u32(kMagic);
  w.u16(kVersion);
  w.u16(static_cast<uint16_t>(c.qps.size()));
  w.u16(c.lid);
  w.u8(c.port);
  w.u8(c.linkLayer);
  w.u8(c.mtu);
  w.bytes(c.gid);
  w.u64(c.fifoAddr);
  w.u32(c.fifoRkey);
  for (const QpInfo& q : c.qps) {
    w.u32(q.qpn);
    w.u32(q.psn);
  }
  return w.data();
}

bool decodeConnInfo(std::span<const std::byte> in, ConnInfo* out, std::string* why) {
  codec::Reader r(in);
  ConnInfo c;
  const uint32_t magic = r.u32();
  const uint16_t version = r.u16();
  const uint16_t nqps = r.u16();
  c.lid = r.u16();
  c.port = r.u8();
  c.linkLayer = r.u8();
  c.mtu = r.u8();
  r.bytes(c.gid);
  c.fifoAddr = r.u64();
  c.fifoRkey = r.u32();
  if (!r.ok()) {
    *why = "connection info too short";
    return false;
  }
  if (magic != kMagic) {
    *why = "not an ibverbs net connection info";
    return false;
  }
  if (version != kVersion) {
    *why = "connection info of another version (" + std::to_string(version) + ")";
    return false;
  }
  if (nqps < 1 || nqps > kMaxQps) {
    *why = "connection info with " + std::to_string(nqps) + " queue pairs (1 to " + std::to_string(kMaxQps) + ")";
    return false;
  }
  if (c.mtu < 1 || c.mtu > 5) {
    *why = "connection info with path MTU code " + std::to_string(c.mtu) + " (1 to 5)";
    return false;
  }
  for (int i = 0; i < nqps; ++i) {
    QpInfo q;
    q.qpn = r.u32();
    q.psn = r.u32();
    if (q.qpn == 0 || q.qpn > 0xffffff || q.psn > 0xffffff) {
      *why = "connection info with queue pair number " + std::to_string(q.qpn) + " / PSN " + std::to_string(q.psn) +
             " out of their 24-bit range";
      return false;
    }
    c.qps.push_back(q);
  }
  if (!r.finished()) {
    *why = r.ok() ? "connection info with trailing bytes" : "connection info too short for its queue pairs";
    return false;
  }
  *out = std::move(c);
  return true;
}

}  // namespace atl::net::ib
