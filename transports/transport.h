// The transport interface: full-duplex byte streams between two ranks, one per (peer, channel).
//
// Lifecycle (Gloo/NCCL style): a Transport is created per communicator before the rendezvous (so
// it can advertise an address in PeerInfo), attached to the exchanged peer table, then asked to
// prepare() a Connector per (peer, channel). The communicator runs four phases over the links a
// call needs (core/connect.h) — prepare all, connect() all (never waits for the peer), finish()
// all (may wait for the peer's connect(), bounded by the deadline), settle() all — so no ordering
// between ranks, nor one thread driving several ranks, can deadlock.
//
// Stream contract used by the engine: bytes arrive in order; peek() returns a contiguous view of
// received, unconsumed bytes; its end is either the end of what has arrived or the end of the
// internal ring, whose capacity is a multiple of 8. The engine pads every message to a multiple of
// 8 bytes, so no element of up to 8 bytes ever straddles a view boundary.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/deadline.h"
#include "base/hmac.h"
#include "base/socket.h"
#include "base/status.h"
#include "base/wire_codec.h"

namespace atl::transport {

/// PeerInfo::flags: the rank accepts shared-memory links (NCCL_SHM_DISABLE unset).
inline constexpr uint32_t kPeerAllowsShm = 1;
/// PeerInfo::flags: the rank reaches other hosts over a plugin net (netName, netHandle).
inline constexpr uint32_t kPeerHasNet = 2;

/// What every rank publishes about itself at rendezvous.
struct PeerInfo {
  int32_t rank = -1;
  int32_t pid = 0;
  uint64_t hostHash = 0;  // equal for ranks that can share memory (hostname + boot id, or NCCL_HOSTID)
  int32_t cudaDev = -1;
  uint32_t flags = 0;     // kPeer* bits: what this rank lets its peers use
  char hostname[64] = {};
  net::SockAddr dataAddr;  // socket transport listener
  // Fresh random bytes of that listener; every hello to it must be proven over them (socket_transport.h).
  std::array<uint8_t, 16> dataChallenge{};
  // With kPeerHasNet: the plugin net this rank uses and its listen handle (net/net_transport.h).
  // Published by every rank, set or not: the rendezvous needs equal sizes, and a rank on another
  // net must meet a clear error (core/init.cc), not a size mismatch.
  char netName[32] = {};
  std::array<uint8_t, 128> netHandle{};
};

/// PeerInfo travels in the rendezvous: field by field (base/wire_codec.h), never as its memory
/// image, which holds padding and a host-order sockaddr_storage.
void encodePeerInfo(codec::Writer& w, const PeerInfo& p);
PeerInfo decodePeerInfo(codec::Reader& r);

/// What a transport needs to know about its communicator once the rendezvous is done.
struct Context {
  int rank = 0;
  int nranks = 0;
  uint64_t commHash = 0;
  Secret secret{};
  std::vector<PeerInfo> peers;
  size_t bufferBytes = 4u << 20;  // per connection and direction; a multiple of 8
  size_t shmDirectMinBytes = 64u << 10;  // shm single copy of pooled memory (0: off), ATOLL_SHM_DIRECT_MIN
  size_t shmCmaMinBytes = 0;             // shm single copy through process_vm_readv (0: off), ATOLL_SHM_CMA_MIN
  int timeoutMs = 120000;         // for connection setup
  int heartbeatMs = 1000;         // socket links: keepalive period (0 = off), see ATOLL_HEARTBEAT_MS
  int heartbeatTimeoutMs = 2000;  // socket links: no acknowledgement for this long = peer host gone
  const AbortFlag* abort = nullptr;
};

class Connection {
 public:
  virtual ~Connection() = default;
  /// Takes up to n bytes without blocking; returns how many were taken (0 when the buffer is full).
  /// A broken link yields ncclRemoteError (peer gone) or ncclSystemError.
  virtual Result<size_t> send(const void* data, size_t n) = 0;
  /// Received, unconsumed bytes (possibly empty), without blocking. See the stream contract above.
  virtual Result<std::span<const std::byte>> peek() = 0;
  /// Releases the first n bytes of the last peek() view.
  virtual void consume(size_t n) = 0;
  /// Moves up to n received bytes into dst without blocking and returns how many (peek, copy,
  /// consume). Transports that can land data straight in dst (a socket's recv) override it to
  /// skip their staging copy. Errors as for peek(), once nothing more can be delivered.
  virtual Result<size_t> receiveInto(void* dst, size_t n);
  virtual std::string describe() const = 0;
  // Single copy. A link whose receiver can read the sender's memory in place (shm: a pointer
  // between thread-ranks, a mapped pool region or process_vm_readv between processes) moves a
  // large message as an offer: the sender puts a descriptor in the stream and keeps its buffer
  // untouched until the receiver says it has read it (transports/shm/shm_direct.h). The schedules
  // are proved to need no buffering for that (algorithms/verify.h, Delivery::Rendezvous). Links
  // that cannot keep the defaults: every message streams.
  enum class Offer : uint8_t { Stream, Offered, Wait };
  /// Sender: offers [data, data + n) whole, or says to stream it (or to ask again: not decided yet,
  /// or no room for the descriptor).
  virtual Result<Offer> offer(const void* /*data*/, size_t /*n*/) { return Offer::Stream; }
  /// Sender: whether the receiver has finished reading the last offer (the buffer is free again).
  virtual Result<bool> offerTaken() { return true; }
  /// Receiver, before the message of n bytes: Offered (read it with readOffered/viewOffered),
  /// Stream (its bytes follow in the stream) or Wait (ask again: not known yet).
  virtual Result<Offer> incoming(size_t /*n*/) { return Offer::Stream; }
  /// Receiver: copies bytes [at, at + n) of the offer into dst; 0 while its descriptor is in flight.
  virtual Result<size_t> readOffered(void* dst, size_t at, size_t n);
  /// Receiver: a view of bytes [at, at + up to n) of the offer, read in place or through a bounce
  /// buffer valid until the next call; empty while the descriptor is in flight.
  virtual Result<std::span<const std::byte>> viewOffered(size_t at, size_t n);
  /// Receiver: the whole offer is read; the sender may reuse its buffer.
  virtual Status finishOffered();
  /// Messages shorter than this always stream, both ways, so the engine skips offer() and
  /// incoming() for them (not virtual: it is asked for every message).
  size_t offerFloor() const { return offerFloor_; }

 protected:
  size_t offerFloor_ = SIZE_MAX;

 public:

  /// Memory this end of the link holds for buffering (ncclCommMemStats).
  virtual size_t bufferBytes() const = 0;
  /// Waits until the peer holds its end of the link too (the last phase of link setup, see
  /// core/connect.h). Once every rank's setup returned, a rank that fails and tears its links
  /// down is seen by the peer as a broken link, never as a peer that has not come yet.
  virtual Status settle(Deadline /*deadline*/, const AbortFlag* /*abort*/) { return Status::Ok(); }
  /// Breaks the link on purpose (this rank gave up on the communicator): the peer's next send or
  /// peek fails with ncclRemoteError instead of waiting, so a failure spreads in one hop per link.
  virtual void shutdown() = 0;
};

class Connector {
 public:
  virtual ~Connector() = default;
  /// Starts the link; must not wait for the peer to act.
  virtual Status connect() = 0;
  /// Completes the link (may wait for the peer until the context's timeout).
  virtual Result<std::unique_ptr<Connection>> finish() = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  /// Shared, not copied: the peer table is O(n) bytes, and the communicator and each of its
  /// transports would otherwise hold a copy each.
  virtual Status attach(std::shared_ptr<const Context> ctx) = 0;
  Status attach(const Context& ctx) { return attach(std::make_shared<const Context>(ctx)); }
  virtual bool canConnect(const PeerInfo& self, const PeerInfo& peer) const = 0;
  /// Creates this side's resources for (peer, channel); called before connect()/finish().
  virtual Result<std::unique_ptr<Connector>> prepare(int peer, int channel) = 0;
};

/// POSIX shared-memory rings (same host, any process).
std::unique_ptr<Transport> createShmTransport();
/// TCP. Listens on `bindAddr` (port 0 = ephemeral) right away and fills in what `me` must publish
/// for it: `dataAddr` and `dataChallenge`.
Result<std::unique_ptr<Transport>> createSocketTransport(const net::SockAddr& bindAddr, PeerInfo* me);

}  // namespace atl::transport
