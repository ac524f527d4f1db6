#include "bootstrap/wire_check.h"

#include <cstring>

namespace atl::bootstrap::wire {

std::optional<size_t> checkJoinHeader(std::span<const uint8_t> header, const Secret& secret, const Nonce& nonce,
                                      std::string* why) {
  if (header.size() != sizeof(JoinHeader)) {
    *why = "join header of " + std::to_string(header.size()) + " bytes";
    return std::nullopt;
  }
  JoinHeader h;
  std::memcpy(&h, header.data(), sizeof(h));
  if (h.magic != kJoinMagic) {
    *why = "not a bootstrap join (bad magic)";
    return std::nullopt;
  }
  if (h.version != kVersion) {
    *why = "protocol version " + std::to_string(h.version) + ", expected " + std::to_string(kVersion);
    return std::nullopt;
  }
  Digest want = joinProof(secret, nonce, h);
  if (!constantTimeEqual(want, {h.proof, sizeof(h.proof)})) {
    *why = "authentication failed (wrong unique id secret)";
    return std::nullopt;
  }
  // Authenticated peers are bounded too: a rank of another build, or a buggy one, cannot make the
  // root allocate or index beyond these.
  if (h.infoSize > kMaxInfoSize) {
    *why = "info size " + std::to_string(h.infoSize) + " exceeds " + std::to_string(kMaxInfoSize);
    return std::nullopt;
  }
  if (h.nranks < 1 || h.nranks > kMaxRanks || h.rank < 0 || h.rank >= h.nranks) {
    *why = "invalid rank " + std::to_string(h.rank) + " of nranks " + std::to_string(h.nranks);
    return std::nullopt;
  }
  if (h.nroots < 1 || h.nroots > h.nranks || h.rootIndex < 0 || h.rootIndex >= h.nroots) {
    *why = "invalid root " + std::to_string(h.rootIndex) + " of " + std::to_string(h.nroots) + " roots";
    return std::nullopt;
  }
  if (h.kind == static_cast<uint32_t>(JoinKind::Join)) {
    if (rootOfRank(h.rank, h.nranks, h.nroots) != h.rootIndex) {
      *why = "rank " + std::to_string(h.rank) + " joined root " + std::to_string(h.rootIndex) + ", which does not serve it";
      return std::nullopt;
    }
    return size_t{0};
  }
  if (h.kind == static_cast<uint32_t>(JoinKind::Lookup)) {
    if (h.count < 1 || h.count > kMaxLookup) {
      *why = "lookup of " + std::to_string(h.count) + " ranks";
      return std::nullopt;
    }
    return static_cast<size_t>(h.count) * sizeof(int32_t);
  }
  *why = "unknown request kind " + std::to_string(h.kind);
  return std::nullopt;
}

std::optional<size_t> checkMsgHeader(std::span<const uint8_t> header, const Secret& secret, const Nonce& nonce,
                                     int nranks, std::string* why) {
  if (header.size() != sizeof(MsgHeader)) {
    *why = "message header of " + std::to_string(header.size()) + " bytes";
    return std::nullopt;
  }
  MsgHeader h;
  std::memcpy(&h, header.data(), sizeof(h));
  if (h.magic != kMsgMagic) {
    *why = "not a bootstrap message (bad magic)";
    return std::nullopt;
  }
  if (h.version != kVersion) {
    *why = "protocol version " + std::to_string(h.version) + ", expected " + std::to_string(kVersion);
    return std::nullopt;
  }
  Digest want = msgProof(secret, nonce, h);
  if (!constantTimeEqual(want, {h.proof, sizeof(h.proof)})) {
    *why = "authentication failed (wrong secret)";
    return std::nullopt;
  }
  if (h.from < 0 || h.from >= nranks) {
    *why = "sender rank " + std::to_string(h.from) + " out of range";
    return std::nullopt;
  }
  if (h.len > kMaxMessageBytes) {
    *why = "message of " + std::to_string(h.len) + " bytes exceeds the bootstrap limit";
    return std::nullopt;
  }
  return static_cast<size_t>(h.len);
}

}  // namespace atl::bootstrap::wire
