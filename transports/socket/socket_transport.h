// TCP transport: one connection per (peer, channel), authenticated with the communicator secret.
//
// Why the lower rank always connects: each pair then opens exactly one socket per channel with no
// simultaneous-open races, and connect() never waits for the peer (the higher rank's listener exists
// from transport creation, before the rendezvous, so the kernel completes the handshake alone).
//
// Why an accept pool: connections from all lower ranks and channels arrive on one listener in any
// order, while finish() is called per (peer, channel). Whatever finish() accepts that belongs to
// another (peer, channel) is stashed for that connector's own finish(). Pending connections are
// multiplexed with poll(), each with its own hello deadline, so a silent or garbage client is
// dropped (and logged) without delaying the real peers.
//
// Why a proof in both directions: the hello carries HMAC(secret, listener's challenge | fields) so
// the acceptor only pairs up peers of this communicator; the acceptor's ack carries HMAC(secret,
// hello), and the hello holds the connector's fresh nonce, so the connector knows it reached the
// real peer and not a stale process reusing the port. Waiting for that ack can only chain from
// lower to higher ranks, so it cannot deadlock the finish() phase.
//
// Why the listener's challenge travels in its PeerInfo rather than on the connection: a hello
// proven over random bytes only this listener issued cannot be replayed from an earlier job (with
// NCCL_COMM_ID the secret and the comm hash repeat across runs) nor to another listener, while
// connect() still sends its hello without waiting for the acceptor. A challenge sent on accept
// would make every connect() wait for its peer to reach finish(), serialising setup rank by rank.
// The rendezvous that carries PeerInfo is itself authenticated (bootstrap/wire.h).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>
#include <type_traits>

#include "base/handshake_server.h"
#include "transports/transport.h"

namespace atl::transport::socket {

inline constexpr uint32_t kHelloMagic = 0x41544c48;  // "ATLH"
// 2: the hello's proof covers the listener's challenge.
inline constexpr uint32_t kHelloVersion = 2;

/// Fixed hello a connecting (lower) rank sends first; all fields in host order.
struct Hello {
  uint32_t magic;
  uint32_t version;
  uint64_t commHash;
  int32_t fromRank;
  int32_t toRank;
  int32_t channel;
  int32_t reserved;
  uint8_t nonce[16];   // the connector's, fresh per hello: it makes the acceptor's ack unique
  uint8_t proof[32];  // HMAC-SHA256(secret, the listener's challenge | every byte above)
};
static_assert(sizeof(Hello) == 80);
static_assert(std::has_unique_object_representations_v<Hello>, "no padding: sent as its bytes");

/// The acceptor's answer: HMAC-SHA256(secret, kAckMagic bytes || the whole hello).
struct Ack {
  uint32_t magic;
  uint32_t reserved;
  uint8_t proof[32];
};
static_assert(sizeof(Ack) == 40);
static_assert(std::has_unique_object_representations_v<Ack>, "no padding: sent as its bytes");

/// The random bytes a listener publishes in its PeerInfo; hellos to it are proven over them.
using Challenge = decltype(PeerInfo::dataChallenge);

/// HMAC-SHA256(secret, challenge | the hello up to its proof).
Digest helloProof(const Secret& secret, const Challenge& challenge, const Hello& h);
/// Why an accepted connection's hello is not from a lower rank of this communicator addressed to
/// `rank` and proven over this listener's `challenge` (nullptr: it is). Free, so the fuzzers
/// (tests/fuzz) run exactly what the listener runs.
const char* checkHello(const Hello& h, uint64_t commHash, int rank, const Secret& secret, const Challenge& challenge);

/// The listener (a HandshakeServer) plus the connections it accepted but has not handed out yet,
/// shared by the connectors of one transport.
class AcceptPool {
 public:
  AcceptPool(net::Fd listenFd, net::SockAddr listenAddr, const Challenge& challenge);

  struct Accepted {
    net::Fd fd;
    std::string peerAddr;
    Hello hello{};
  };
  /// Accepts until the hello of (peer, channel) arrives or the deadline passes.
  Result<Accepted> take(const Context& ctx, int peer, int channel, Deadline deadline);
  const net::SockAddr& address() const { return addr_; }

 private:
  std::optional<size_t> judge(const net::HandshakeServer::Conn& c, std::string* why) const;
  void stash(net::HandshakeServer::Conn&& c);

  std::mutex mu_;
  net::SockAddr addr_;
  const Challenge challenge_;
  const Context* ctx_ = nullptr;  // the caller of take(), which holds mu_ while the server runs
  net::HandshakeServer server_;
  std::map<std::pair<int, int>, Accepted> ready_;
  std::set<std::pair<int, int>> taken_;
};

class SocketTransport final : public Transport {
 public:
  explicit SocketTransport(std::shared_ptr<AcceptPool> pool) : pool_(std::move(pool)) {}
  const char* name() const override { return "Socket"; }
  using Transport::attach;
  Status attach(std::shared_ptr<const Context> ctx) override;
  bool canConnect(const PeerInfo&, const PeerInfo&) const override { return true; }
  Result<std::unique_ptr<Connector>> prepare(int peer, int channel) override;

 private:
  std::shared_ptr<AcceptPool> pool_;
  std::shared_ptr<const Context> ctx_;
};

}  // namespace atl::transport::socket
