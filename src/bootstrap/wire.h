// Wire formats of the bootstrap: the rendezvous with the root and rank-to-rank messages. Every
// connection starts with the accepting side sending a fresh nonce; the connecting side's header then
// carries HMAC(secret, nonce | header fields), so a replayed or forged header is rejected.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <vector>
#include <type_traits>

#include "base/handshake_server.h"
#include "base/hmac.h"
#include "base/socket.h"

namespace atl::bootstrap::wire {

constexpr uint32_t kJoinMagic = 0x41544a4e;   // "ATJN"
constexpr uint32_t kReplyMagic = 0x41545250;  // "ATRP"
constexpr uint32_t kMsgMagic = 0x4154534d;    // "ATSM"
constexpr uint32_t kVersion = 3;  // 2: partner addresses only, lookups, several roots; 3: payload MACs

constexpr uint32_t kMaxInfoSize = 4096;
constexpr int32_t kMaxRanks = 1 << 18;
constexpr uint64_t kMaxMessageBytes = 64ull << 20;
constexpr size_t kNonceSize = 32;
/// How long an accepted connection may take to authenticate before it is dropped; bounds how long a
/// silent client holds a slot (it never blocks anyone else: connections are served concurrently).
constexpr int kHandshakeTimeoutMs = 5000;

using Nonce = net::HandshakeServer::Nonce;
static_assert(sizeof(Nonce) == kNonceSize);

/// What a connection to a root asks for.
enum class JoinKind : uint32_t {
  Join = 0,    // a rank of this root's block joins; no body (the info travels rank to rank)
  Lookup = 1,  // a rank of any block asks for listen addresses of this block's ranks; body: int32 ranks
};
/// At most this many ranks in one lookup: a rank looks up only its log-depth partners.
constexpr uint32_t kMaxLookup = 64;

/// Rank -> root, after the root's nonce; followed by `count` int32 ranks for a Lookup.
///
/// Why no info body: the root hands each rank only the listen addresses of its Bruck all-gather
/// partners (about log2(n) of them), and the ranks gather everyone's info among themselves in
/// log2(n) rounds (messaging.h), so the root neither stores nor sends the n x info table.
/// `infoSize` is still declared, so that ranks of mismatched builds fail at the root with a clear
/// message. Several roots (ncclCommInitRankScalable) each serve one block of ranks; every field
/// that says which blocks exist must agree, and all of it is covered by the proof.
struct JoinHeader {
  uint32_t magic;
  uint32_t version;
  int32_t rank;
  int32_t nranks;
  uint32_t infoSize;
  uint32_t kind;   // JoinKind
  int32_t nroots;  // how many roots serve this communicator
  int32_t rootIndex;  // which one this is
  uint32_t count;  // Lookup: ranks asked for
  uint32_t reserved;
  net::PackedAddr listenAddr;  // where this rank accepts rank-to-rank messages
  uint8_t proof[32];
};
static_assert(sizeof(JoinHeader) == 92);
static_assert(std::has_unique_object_representations_v<JoinHeader>, "no padding: sent as its bytes");

/// Root -> rank. status != ncclSuccess: followed by msgLen bytes of message. Otherwise followed by
/// `count` AddrEntry: the listen addresses the rank needs (its partners in this root's block, or
/// what it looked up).
struct ReplyHeader {
  uint32_t magic;
  int32_t status;
  int32_t nranks;
  uint32_t count;
  uint32_t msgLen;
};
static_assert(std::has_unique_object_representations_v<ReplyHeader>, "no padding: sent as its bytes");

struct AddrEntry {
  int32_t rank;
  uint32_t reserved;
  net::PackedAddr addr;
};
static_assert(sizeof(AddrEntry) == 28);
static_assert(std::has_unique_object_representations_v<AddrEntry>, "no padding: sent as its bytes");

/// Which root serves `rank` when `nroots` roots serve `nranks` ranks: contiguous blocks whose
/// sizes differ by at most one, the larger first (NCCL's split for ncclCommInitRankScalable).
inline int rootOfRank(int rank, int nranks, int nroots) {
  const int per = nranks / nroots, extra = nranks % nroots;
  const int big = extra * (per + 1);
  return rank < big ? rank / (per + 1) : extra + (rank - big) / per;
}
/// The first rank root `index` serves (index == nroots: nranks).
inline int firstRankOfRoot(int index, int nranks, int nroots) {
  const int per = nranks / nroots, extra = nranks % nroots;
  return index * per + (index < extra ? index : extra);
}

/// The ranks `rank` sends to in the Bruck all-gather (messaging.cc): rank - 2^j mod n, j < ceil(log2 n).
inline std::vector<int> bruckPartners(int rank, int nranks) {
  std::vector<int> out;
  for (int64_t d = 1; d < nranks; d <<= 1) out.push_back(static_cast<int>((rank - d % nranks + nranks) % nranks));
  return out;
}

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
static_assert(std::has_unique_object_representations_v<MsgHeader>, "no padding: sent as its bytes");

constexpr uint8_t kAck = 0xA5;
/// The receiver's answer to a message whose body MAC is wrong (it was altered in flight).
constexpr uint8_t kNak = 0x5A;

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
  put(m, &h.kind, sizeof(h.kind));
  put(m, &h.nroots, sizeof(h.nroots));
  put(m, &h.rootIndex, sizeof(h.rootIndex));
  put(m, &h.count, sizeof(h.count));
  put(m, &h.listenAddr, sizeof(h.listenAddr));
  return hmacSha256(secret, m);
}

/// Every body (a message's payload, a lookup's ranks, a root's reply) is followed by this MAC over
/// the connection's nonce, the whole header as sent and the body, so no byte of it can be changed
/// in flight: the header proofs only let a listener bound what it reads before the body is in.
constexpr size_t kMacBytes = 32;
inline Digest bodyMac(const Secret& secret, uint32_t what, const Nonce& nonce, std::span<const uint8_t> header,
                      std::span<const uint8_t> body) {
  std::vector<uint8_t> m;
  put(m, &what, sizeof(what));
  put(m, nonce.data(), nonce.size());
  put(m, header.data(), header.size());
  put(m, body.data(), body.size());
  return hmacSha256(secret, m);
}
/// Checks the MAC that ends `body` (as read: the body, then kMacBytes) and strips it; false if
/// it does not match.
inline bool takeBodyMac(const Secret& secret, uint32_t what, const Nonce& nonce, std::span<const uint8_t> header,
                        std::vector<uint8_t>& body) {
  if (body.size() < kMacBytes) return false;
  const size_t len = body.size() - kMacBytes;
  const Digest want = bodyMac(secret, what, nonce, header, {body.data(), len});
  if (!constantTimeEqual(want, {body.data() + len, kMacBytes})) return false;
  body.resize(len);
  return true;
}
constexpr uint32_t kMacMessage = 0x4154544d;  // "ATTM": rank -> rank message
constexpr uint32_t kMacJoin = 0x4154544a;     // "ATTJ": rank -> root request
constexpr uint32_t kMacReply = 0x41545452;    // "ATTR": root -> rank reply

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
