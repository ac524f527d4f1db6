// What two ends of an ibverbs net connection tell each other over the TCP handshake before their
// RC queue pairs can reach each other: the port's addressing (LID for InfiniBand, GID for RoCE),
// the path MTU, one (QPN, PSN) per queue pair, and on the sender's side where its FIFO is (the
// receiver RDMA-writes its posted receives there, ib_flow.h). Field by field, little-endian, with
// a magic and version, so a stray or truncated message is refused, not misread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace atl::net::ib {

inline constexpr int kMaxQps = 16;  // NCCL_IB_QPS_PER_CONNECTION's ceiling

struct QpInfo {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  friend bool operator==(const QpInfo&, const QpInfo&) = default;
};

struct ConnInfo {
  uint16_t lid = 0;
  uint8_t port = 0;
  uint8_t linkLayer = 0;  // IBV_LINK_LAYER_INFINIBAND or IBV_LINK_LAYER_ETHERNET (RoCE)
  uint8_t mtu = 0;        // enum ibv_mtu
  std::array<uint8_t, 16> gid{};
  uint64_t fifoAddr = 0;  // sender only: its FIFO of receive slots, and the key to write it
  uint32_t fifoRkey = 0;
  std::vector<QpInfo> qps;
  friend bool operator==(const ConnInfo&, const ConnInfo&) = default;
};

std::vector<std::byte> encodeConnInfo(const ConnInfo& c);
/// False with a reason for anything that is not one whole, sane ConnInfo.
bool decodeConnInfo(std::span<const std::byte> in, ConnInfo* out, std::string* why);

}  // namespace atl::net::ib
