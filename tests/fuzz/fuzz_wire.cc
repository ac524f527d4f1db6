// The handshake parsers every listener runs on untrusted bytes: the root's join header, the rank
// message header, the data transport's hello. The first byte picks the parser; with "authentic"
// modes the harness signs the fuzzed fields with the job's secret, so the fuzzer also reaches the
// checks behind the HMAC (a buggy or foreign-build peer that knows the secret) and the bounds on
// every length must still hold.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/wire_check.h"
#include "core/fault_notice.h"
#include "transports/socket/socket_transport.h"

namespace {

namespace wire = atl::bootstrap::wire;
using atl::transport::socket::Hello;

const atl::Secret kSecret = [] {
  atl::Secret s{};
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(i * 7 + 1);
  return s;
}();
const atl::transport::socket::Challenge kChallenge = [] {
  atl::transport::socket::Challenge c{};
  for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<uint8_t>(i * 13 + 5);
  return c;
}();
const wire::Nonce kNonce = [] {
  wire::Nonce n{};
  for (size_t i = 0; i < n.size(); ++i) n[i] = static_cast<uint8_t>(255 - i);
  return n;
}();

template <class T>
T fill(const uint8_t* data, size_t size) {
  T t{};
  std::memcpy(&t, data, std::min(size, sizeof(T)));
  return t;
}

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0] % 7, knob = data[1];
  data += 2, size -= 2;
  std::string why;
  switch (mode) {
    case 0:  // raw bytes at the root
      check(!wire::checkJoinHeader({data, size}, kSecret, kNonce, &why).has_value() || size == sizeof(wire::JoinHeader));
      break;
    case 1:  // raw bytes at a rank's message listener
      (void)wire::checkMsgHeader({data, size}, kSecret, kNonce, 1 + knob % 64, &why);
      break;
    case 2: {  // an authentic join with fuzzed fields
      wire::JoinHeader h = fill<wire::JoinHeader>(data, size);
      if (knob & 1) h.magic = wire::kJoinMagic, h.version = wire::kVersion;
      atl::Digest d = wire::joinProof(kSecret, kNonce, h);
      std::memcpy(h.proof, d.data(), d.size());
      auto got = wire::checkJoinHeader({reinterpret_cast<const uint8_t*>(&h), sizeof(h)}, kSecret, kNonce, &why);
      if (got) check(*got <= wire::kMaxInfoSize && h.rank >= 0 && h.rank < h.nranks && h.nranks <= wire::kMaxRanks);
      break;
    }
    case 3: {  // an authentic message header with fuzzed fields
      wire::MsgHeader h = fill<wire::MsgHeader>(data, size);
      if (knob & 1) h.magic = wire::kMsgMagic, h.version = wire::kVersion;
      atl::Digest d = wire::msgProof(kSecret, kNonce, h);
      std::memcpy(h.proof, d.data(), d.size());
      const int nranks = 1 + knob % 64;
      auto got = wire::checkMsgHeader({reinterpret_cast<const uint8_t*>(&h), sizeof(h)}, kSecret, kNonce, nranks, &why);
      if (got) check(*got <= wire::kMaxMessageBytes && h.from >= 0 && h.from < nranks);
      break;
    }
    case 4:  // raw bytes at a data listener
      (void)atl::transport::socket::checkHello(fill<Hello>(data, size), 0x1234, knob % 16, kSecret, kChallenge);
      break;
    case 6: {  // a failure notice (core/fault_notice.h), raw, or with a valid magic and version
      std::vector<std::byte> bytes(reinterpret_cast<const std::byte*>(data), reinterpret_cast<const std::byte*>(data) + size);
      if ((knob & 1) && bytes.size() >= 8) {
        atl::fault::Notice n = fill<atl::fault::Notice>(data, size);
        bytes = atl::fault::encode(n);
      }
      const int nranks = 1 + knob % 64;
      if (auto n = atl::fault::decode(bytes, nranks))
        check(n->origin >= 0 && n->origin < nranks && n->detector >= 0 && n->detector < nranks &&
              std::memchr(n->reason, '\0', sizeof n->reason) != nullptr);
      break;
    }
    default: {  // an authentic hello with fuzzed fields
      Hello h = fill<Hello>(data, size);
      if (knob & 1) h.magic = atl::transport::socket::kHelloMagic, h.version = atl::transport::socket::kHelloVersion;
      atl::Digest d = atl::transport::socket::helloProof(kSecret, kChallenge, h);
      std::memcpy(h.proof, d.data(), d.size());
      const int rank = knob % 16;
      if (atl::transport::socket::checkHello(h, h.commHash, rank, kSecret, kChallenge) == nullptr)
        check(h.fromRank >= 0 && h.fromRank < rank && h.toRank == rank && h.channel >= 0);
      // The same signed hello must not pass at a listener with another challenge.
      atl::transport::socket::Challenge other = kChallenge;
      other[knob % other.size()] ^= 1;
      check(atl::transport::socket::checkHello(h, h.commHash, rank, kSecret, other) != nullptr);
      break;
    }
  }
  return 0;
}
