// Wire formats of the bootstrap: the rendezvous with the root and rank-to-rank messages. Every
// connection starts with the accepting side sending a fresh nonce; the connecting side's header then
// carries HMAC(secret, nonce | header fields), so a replayed or forged header is rejected.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "common/hmac.h"
#include "common/socket.h"

namespace atl::bootstrap::wire {

constexpr uint32_t kJoinMagic = 0x41544a4e;   // "ATJN"
constexpr uint32_t kReplyMagic = 0x41545250;  // "ATRP"
constexpr uint32_t kMsgMagic = 0x4154534d;    // "ATSM"
constexpr uint32_t kVersion = 1;

constexpr uint32_t kMaxInfoSize = 4096;
constexpr int32_t kMaxRanks = 1 << 18;
constexpr uint64_t kMaxMessageBytes = 64ull << 20;
constexpr size_t kNonceSize = 32;
/// How long an accepted connection may take to authenticate before it is dropped; bounds how long a
/// silent client holds a slot (it never blocks anyone else: connections are served concurrently).
constexpr int kHandshakeTimeoutMs = 5000;

using Nonce = std::array<uint8_t, kNonceSize>;

/// Rank -> root, after the root's nonce; followed by infoSize bytes of info.
struct JoinHeader {
  uint32_t magic;
  uint32_t version;
  int32_t rank;
  int32_t nranks;
  uint32_t infoSize;
  net::PackedAddr listenAddr;  // where this rank accepts rank-to-rank messages
  uint8_t proof[32];
};
static_assert(sizeof(JoinHeader) == 72);

/// Root -> rank. status != ncclSuccess: followed by msgLen bytes of message. Otherwise followed by
/// nranks PackedAddr (listen addresses) and nranks * infoSize bytes of info.
struct ReplyHeader {
  uint32_t magic;
  int32_t status;
  int32_t nranks;
  uint32_t infoSize;
  uint32_t msgLen;
};

/// Sender -> receiver, after the receiver's nonce; followed by len payload bytes. The receiver
/// answers one ack byte once the message is queued, which keeps messages of one (peer, tag) ordered.
struct MsgHeader {
  uint32_t magic;
  int32_t from;
  uint32_t tag;
  uint32_t version;  // kVersion
  uint64_t len;
  uint8_t proof[32];
};
static_assert(sizeof(MsgHeader) == 56);

constexpr uint8_t kAck = 0xA5;

/// Little helper that appends plain values to a byte buffer for proofs.
inline void put(std::vector<uint8_t>& out, const void* p, size_t n) {
  auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

inline Digest joinProof(const Secret& secret, const Nonce& nonce, const JoinHeader& h) {
  std::vector<uint8_t> m;
  put(m, nonce.data(), nonce.size());
  put(m, &h.rank, sizeof(h.rank));
  put(m, &h.nranks, sizeof(h.nranks));
  put(m, &h.infoSize, sizeof(h.infoSize));
  put(m, &h.listenAddr, sizeof(h.listenAddr));
  return hmacSha256(secret, m);
}

inline Digest msgProof(const Secret& secret, const Nonce& nonce, const MsgHeader& h) {
  std::vector<uint8_t> m;
  put(m, nonce.data(), nonce.size());
  put(m, &h.from, sizeof(h.from));
  put(m, &h.tag, sizeof(h.tag));
  put(m, &h.version, sizeof(h.version));
  put(m, &h.len, sizeof(h.len));
  return hmacSha256(secret, m);
}

}  // namespace atl::bootstrap::wire
