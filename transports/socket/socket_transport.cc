#include "transports/socket/socket_transport.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "base/debug.h"
#include "base/fd_limit.h"
#include "transports/socket/socket_stream.h"

namespace atl::transport::socket {
namespace {

constexpr uint32_t kAckMagic = 0x41544c41;  // "ATLA"
// A real peer sends its hello right after connecting; anything slower than this is not one of ours.
constexpr int kHelloTimeoutMs = 10000;
constexpr int kPollSliceMs = 100;

Digest ackProof(const Secret& secret, const Hello& h) {
  uint8_t msg[sizeof(kAckMagic) + sizeof(Hello)];
  std::memcpy(msg, &kAckMagic, sizeof(kAckMagic));
  std::memcpy(msg + sizeof(kAckMagic), &h, sizeof(Hello));
  return hmacSha256(secret, msg);
}

class SocketConnector final : public Connector {
 public:
  SocketConnector(std::shared_ptr<AcceptPool> pool, std::shared_ptr<const Context> ctx, int peer, int channel)
      : pool_(std::move(pool)), ctx_(std::move(ctx)), peer_(peer), channel_(channel) {}

  Status connect() override {
    if (ctx_->rank > peer_) return Status::Ok();  // the lower rank dials; we accept in finish()
    const net::SockAddr& addr = ctx_->peers[peer_].dataAddr;
    if (!addr.valid())
      return ATOLL_ERROR(ncclInternalError, "socket: rank %d: rank %d published no address", ctx_->rank, peer_);
    Deadline deadline = Deadline::afterMs(ctx_->timeoutMs);
    // The peer's listener exists from before the rendezvous until its communicator ends, so a
    // refusal means the peer is gone: fail now, not at the deadline (links are made during calls).
    auto fd = net::connectTo(addr, deadline, ctx_->abort, net::ConnectRetry::Never);
    if (!fd.ok())
      return ATOLL_ERROR(ncclRemoteError, "socket: rank %d: cannot reach rank %d (host %.*s at %s): %s", ctx_->rank,
                         peer_, static_cast<int>(strnlen(ctx_->peers[peer_].hostname, sizeof ctx_->peers[peer_].hostname)),
                         ctx_->peers[peer_].hostname, addr.toString().c_str(), lastErrorMessage().c_str());
    fd_ = std::move(*fd);
    hello_ = Hello{};
    hello_.magic = kHelloMagic;
    hello_.version = kHelloVersion;
    hello_.commHash = ctx_->commHash;
    hello_.fromRank = ctx_->rank;
    hello_.toRank = peer_;
    hello_.channel = channel_;
    randomBytes(hello_.nonce);
    Digest proof = helloProof(ctx_->secret, ctx_->peers[peer_].dataChallenge, hello_);
    std::memcpy(hello_.proof, proof.data(), proof.size());
    // 80 bytes always fit in an empty socket buffer: this does not wait for the peer.
    return net::sendAll(fd_.get(), &hello_, sizeof(hello_), deadline, ctx_->abort);
  }

  Result<std::unique_ptr<Connection>> finish() override {
    Deadline deadline = Deadline::afterMs(ctx_->timeoutMs);
    std::string peerAddr;
    if (ctx_->rank < peer_) {
      if (!fd_.valid()) return ATOLL_ERROR(ncclInternalError, "socket: finish() without a successful connect()");
      peerAddr = ctx_->peers[peer_].dataAddr.toString();
      Ack ack{};
      Status st = net::recvAll(fd_.get(), &ack, sizeof(ack), deadline, ctx_->abort);
      if (!st.ok())
        return ATOLL_ERROR(st.code(), "socket: rank %d: no handshake answer from rank %d (%s) channel %d",
                           ctx_->rank, peer_, peerAddr.c_str(), channel_);
      Digest want = ackProof(ctx_->secret, hello_);
      if (ack.magic != kAckMagic || !constantTimeEqual(want, ack.proof))
        return ATOLL_ERROR(ncclSystemError,
                           "socket: rank %d: %s answered as rank %d with a bad proof (another job on that port?)",
                           ctx_->rank, peerAddr.c_str(), peer_);
    } else {
      ATOLL_ASSIGN_OR_RETURN(AcceptPool::Accepted acc, pool_->take(*ctx_, peer_, channel_, deadline));
      Ack ack{};
      ack.magic = kAckMagic;
      Digest proof = ackProof(ctx_->secret, acc.hello);
      std::memcpy(ack.proof, proof.data(), proof.size());
      ATOLL_CHECK(net::sendAll(acc.fd.get(), &ack, sizeof(ack), deadline, ctx_->abort));
      fd_ = std::move(acc.fd);
      peerAddr = std::move(acc.peerAddr);
    }
    ATOLL_INFO(log::kNet, "socket: rank %d <-> %d channel %d connected via %s", ctx_->rank, peer_, channel_,
               peerAddr.c_str());
    // Errors name the peer's host as well as its address: that is what an operator looks for.
    const transport::PeerInfo& who = ctx_->peers[static_cast<size_t>(peer_)];
    std::string name = "host " + std::string(who.hostname, strnlen(who.hostname, sizeof who.hostname)) + " at " + peerAddr;
    return std::unique_ptr<Connection>(std::make_unique<SocketConnection>(std::move(fd_), ctx_->rank, peer_, channel_,
                                                                          std::move(name), ctx_->bufferBytes,
                                                                          Heartbeat{ctx_->heartbeatMs, ctx_->heartbeatTimeoutMs}));
  }

 private:
  std::shared_ptr<AcceptPool> pool_;
  std::shared_ptr<const Context> ctx_;
  int peer_, channel_;
  net::Fd fd_;
  Hello hello_{};
};

}  // namespace

AcceptPool::AcceptPool(net::Fd listenFd, net::SockAddr listenAddr, const Challenge& challenge)
    : addr_(listenAddr),
      challenge_(challenge),
      // No nonce on accept: the challenge travels in PeerInfo (socket_transport.h says why).
      server_(std::move(listenFd), {.name = "socket", .headerSize = sizeof(Hello), .sendNonce = false,
                                    .headerTimeoutMs = kHelloTimeoutMs, .bodyTimeoutMs = kHelloTimeoutMs},
              [this](const net::HandshakeServer::Conn& c, std::string* why) { return judge(c, why); },
              [this](net::HandshakeServer::Conn&& c) { stash(std::move(c)); }) {}

std::optional<size_t> AcceptPool::judge(const net::HandshakeServer::Conn& c, std::string* why) const {
  Hello h;
  std::memcpy(&h, c.header.data(), sizeof(h));
  if (const char* bad = checkHello(h, ctx_->commHash, ctx_->rank, ctx_->secret, challenge_)) {
    *why = bad;
    return std::nullopt;
  }
  const auto key = std::make_pair(static_cast<int>(h.fromRank), static_cast<int>(h.channel));
  if (ready_.count(key) != 0 || taken_.count(key) != 0) {
    *why = "duplicate connection for that rank/channel";
    return std::nullopt;
  }
  return 0;  // a hello has no body
}

void AcceptPool::stash(net::HandshakeServer::Conn&& c) {
  Accepted acc{std::move(c.fd), std::move(c.peer), {}};
  std::memcpy(&acc.hello, c.header.data(), sizeof(Hello));
  const auto key = std::make_pair(static_cast<int>(acc.hello.fromRank), static_cast<int>(acc.hello.channel));
  ready_.emplace(key, std::move(acc));
}

Result<AcceptPool::Accepted> AcceptPool::take(const Context& ctx, int peer, int channel, Deadline deadline) {
  std::lock_guard<std::mutex> lock(mu_);
  ctx_ = &ctx;
  server_.setName("socket: rank " + std::to_string(ctx.rank));
  server_.setHeaderTimeoutMs(ctx.timeoutMs > 0 ? std::min(kHelloTimeoutMs, ctx.timeoutMs) : kHelloTimeoutMs);
  const auto key = std::make_pair(peer, channel);
  for (;;) {
    if (auto it = ready_.find(key); it != ready_.end()) {
      Accepted acc = std::move(it->second);
      ready_.erase(it);
      taken_.insert(key);
      return acc;
    }
    if (aborted(ctx.abort))
      return ATOLL_ERROR(ncclSystemError, "socket: rank %d: aborted while waiting for rank %d", ctx.rank, peer);
    if (deadline.expired())
      return ATOLL_ERROR(ncclSystemError, "socket: rank %d: timed out waiting for rank %d to connect (channel %d)",
                         ctx.rank, peer, channel);
    server_.pump(deadline.remainingMs(kPollSliceMs));
    // Out of descriptors is this rank's problem: waiting would only end in blaming the peer.
    if (int err = server_.takeFdError())
      return ATOLL_ERROR(ncclSystemError, "socket: rank %d: cannot accept a link: %s%s", ctx.rank, std::strerror(err),
                         net::fdHint(err).c_str());
  }
}

Digest helloProof(const Secret& secret, const Challenge& challenge, const Hello& h) {
  uint8_t msg[sizeof(Challenge) + offsetof(Hello, proof)];
  std::memcpy(msg, challenge.data(), challenge.size());
  std::memcpy(msg + challenge.size(), &h, offsetof(Hello, proof));
  return hmacSha256(secret, msg);
}

const char* checkHello(const Hello& h, uint64_t commHash, int rank, const Secret& secret, const Challenge& challenge) {
  if (h.magic != kHelloMagic) return "not an Atoll hello (bad magic)";
  if (h.version != kHelloVersion) return "protocol version mismatch";
  if (h.commHash != commHash) return "belongs to another communicator";
  if (h.toRank != rank) return "addressed to another rank";
  if (h.fromRank < 0 || h.fromRank >= rank || h.channel < 0) return "bad rank or channel";
  Digest want = helloProof(secret, challenge, h);
  if (!constantTimeEqual(want, h.proof)) return "bad proof (wrong secret, or replayed from another listener)";
  return nullptr;
}

Status SocketTransport::attach(std::shared_ptr<const Context> ctx) {
  if (ctx == nullptr || ctx->nranks <= 0 || ctx->rank < 0 || ctx->rank >= ctx->nranks ||
      static_cast<int>(ctx->peers.size()) != ctx->nranks)
    return ATOLL_ERROR(ncclInvalidArgument, "socket: bad context (rank %d of %d, %zu peers)", ctx ? ctx->rank : -1,
                       ctx ? ctx->nranks : 0, ctx ? ctx->peers.size() : 0);
  ctx_ = std::move(ctx);
  return Status::Ok();
}

Result<std::unique_ptr<Connector>> SocketTransport::prepare(int peer, int channel) {
  if (ctx_ == nullptr) return ATOLL_ERROR(ncclInternalError, "socket: prepare() before attach()");
  if (peer < 0 || peer >= ctx_->nranks || peer == ctx_->rank || channel < 0)
    return ATOLL_ERROR(ncclInvalidArgument, "socket: bad peer %d / channel %d for rank %d of %d", peer, channel,
                       ctx_->rank, ctx_->nranks);
  return std::unique_ptr<Connector>(std::make_unique<SocketConnector>(pool_, ctx_, peer, channel));
}

}  // namespace atl::transport::socket

namespace atl::transport {
Result<std::unique_ptr<Transport>> createSocketTransport(const net::SockAddr& bindAddr, PeerInfo* me) {
  net::SockAddr bound;
  ATOLL_ASSIGN_OR_RETURN(net::Fd fd, net::listenOn(bindAddr, SOMAXCONN, &bound));
  // Accepted sockets inherit the receive buffer size, which bounds the TCP window negotiated at SYN time.
  int bytes = 4 << 20;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  socket::Challenge challenge;
  randomBytes(challenge);
  if (me != nullptr) me->dataAddr = bound, me->dataChallenge = challenge;
  auto pool = std::make_shared<socket::AcceptPool>(std::move(fd), bound, challenge);
  return std::unique_ptr<Transport>(std::make_unique<socket::SocketTransport>(std::move(pool)));
}
}  // namespace atl::transport
