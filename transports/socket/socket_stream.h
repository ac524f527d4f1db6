// One established TCP link of the socket transport, as a Connection.
//
// Why send() goes straight from the caller's memory: the kernel socket buffer already is a send
// ring, so a second user-space copy would only add latency. Why receive goes through a staging
// ring: the engine wants to reduce from a stable contiguous view and release it piecemeal, which a
// socket cannot offer; the ring also lets one recv() pull many small messages at once.
//
// Views are whole 8-byte words of the stream (a trailing partial word, which TCP may deliver at any
// split, is withheld until it completes); the ring capacity is a multiple of 8 so its end never
// splits a word. Bytes that arrived before the peer closed are handed out before the error.
//
// receiveInto() drains what is staged, then recv()s straight into the caller's memory: one kernel
// copy instead of two for data that needs no reduction. Ring counters are stream positions, so
// bytes that bypass an empty ring advance both, keeping ring offsets and stream words aligned.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "transports/transport.h"

namespace atl::transport::socket {

/// How a link finds out that the peer's host is gone without a word (power, cable, partition):
/// TCP keepalive probes after `periodMs` idle, and a link that waits on acknowledgements (data in
/// flight, window probes) that have not come for `timeoutMs`. Kernels answer both, so a busy or
/// stopped peer process still does; only its host going silent counts. periodMs 0 = neither.
struct Heartbeat {
  int periodMs = 0;
  int timeoutMs = 0;
};

class SocketConnection final : public Connection {
 public:
  /// Takes an established, authenticated socket; makes it non-blocking with large buffers.
  SocketConnection(net::Fd fd, int rank, int peer, int channel, std::string peerAddr, size_t bufferBytes,
                   Heartbeat heartbeat = {});

  Result<size_t> send(const void* data, size_t n) override;
  Result<std::span<const std::byte>> peek() override;
  void consume(size_t n) override;
  Result<size_t> receiveInto(void* dst, size_t n) override;
  std::string describe() const override;
  size_t bufferBytes() const override { return cap_; }
  void shutdown() override;

  /// Staging capacity used for a requested size (a multiple of 8, at least 4 KiB).
  static size_t stagingCapacity(size_t requestedBytes);

 private:
  Status fill();
  /// One non-blocking recv (EINTR retried): bytes read, or 0 when nothing is there or the peer is
  /// gone (then closedErr_ is set); other failures are errors.
  Result<size_t> recvSome(void* dst, size_t n);
  Status lost(const char* what, int err);
  /// While a call waits on this link: whether the peer's host stopped acknowledging (Heartbeat).
  Status checkPeerHost();
  static constexpr auto kHostCheckEvery = std::chrono::milliseconds(50);

  net::Fd fd_;
  int rank_, peer_, channel_;
  std::string peerAddr_;
  std::unique_ptr<std::byte[]> ring_;
  uint64_t cap_;
  uint64_t head_ = 0;  // stream position received so far (through the ring or around it)
  uint64_t tail_ = 0;  // stream position consumed so far
  int closedErr_ = 0;  // errno-style reason once the peer is gone (-1 = orderly EOF)
  Heartbeat heartbeat_;
  std::chrono::steady_clock::time_point nextHostCheck_{};
};

}  // namespace atl::transport::socket
