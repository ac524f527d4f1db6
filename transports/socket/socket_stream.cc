#include "transports/socket/socket_stream.h"

#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/debug.h"

namespace atl::transport::socket {
namespace {
constexpr int kSocketBufferBytes = 4 << 20;
}

size_t SocketConnection::stagingCapacity(size_t requestedBytes) {
  size_t cap = std::max<size_t>(requestedBytes, 4096);
  return (cap + 7) & ~size_t{7};
}

SocketConnection::SocketConnection(net::Fd fd, int rank, int peer, int channel, std::string peerAddr,
                                   size_t bufferBytes, Heartbeat heartbeat)
    : fd_(std::move(fd)),
      rank_(rank),
      peer_(peer),
      channel_(channel),
      peerAddr_(std::move(peerAddr)),
      cap_(stagingCapacity(bufferBytes)),
      heartbeat_(heartbeat) {
  // The staging ring is allocated on first use, uninitialised: large receives land straight in the
  // user's buffer (receiveInto), so many links never stage anything, and a zero-filled megabyte per
  // link would be resident memory for nothing.
  net::setNonBlocking(fd_.get());
  net::setNoDelay(fd_.get());
  // Large kernel buffers keep a bandwidth-delay product in flight; the kernel caps them at its limits.
  int bytes = std::max<int>(kSocketBufferBytes, static_cast<int>(std::min<size_t>(bufferBytes, 1u << 30)));
  ::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
  if (heartbeat_.periodMs > 0) {
    // An idle link is the kernel's job: probes after periodS of silence, then every periodS, and
    // ETIMEDOUT after `probes` unanswered ones (whole seconds, as TCP counts them). Not
    // TCP_USER_TIMEOUT: it also ends a link whose receiver keeps its window shut while answering
    // every probe, which is what a live rank busy elsewhere does (fault_slow_rank_socket_4).
    const int one = 1, periodS = std::max(1, (heartbeat_.periodMs + 999) / 1000);
    const int probes = std::clamp((heartbeat_.timeoutMs + periodS * 1000 - 1) / (periodS * 1000) - 1, 1, 127);
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    ::setsockopt(fd_.get(), IPPROTO_TCP, TCP_KEEPIDLE, &periodS, sizeof(periodS));
    ::setsockopt(fd_.get(), IPPROTO_TCP, TCP_KEEPINTVL, &periodS, sizeof(periodS));
    ::setsockopt(fd_.get(), IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
  }
}

Status SocketConnection::checkPeerHost() {
  // Keepalive only runs on an idle link. A link with data in flight, or probing a shut window,
  // is judged here while a call waits on it: a live host acknowledges data within a round trip
  // and answers every window probe, however busy the process behind it is.
  if (heartbeat_.periodMs <= 0) return Status::Ok();
  const auto now = std::chrono::steady_clock::now();
  if (now < nextHostCheck_) return Status::Ok();
  nextHostCheck_ = now + kHostCheckEvery;
  tcp_info ti{};
  socklen_t len = sizeof ti;
  if (::getsockopt(fd_.get(), IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) return Status::Ok();
  const bool waitingForAck = ti.tcpi_unacked > 0 || ti.tcpi_probes >= 2;
  if (waitingForAck && ti.tcpi_last_ack_recv >= static_cast<uint32_t>(heartbeat_.timeoutMs)) return lost("", ETIMEDOUT);
  return Status::Ok();
}

Status SocketConnection::lost(const char* what, int err) {
  if (err == ETIMEDOUT && heartbeat_.periodMs > 0)
    return ATOLL_ERROR(ncclRemoteError,
                       "socket: rank %d: peer rank %d (%s) channel %d: its host acknowledged nothing for %d ms "
                       "(ATOLL_HEARTBEAT_MS, ATOLL_HEARTBEAT_TIMEOUT_MS): host down or unreachable",
                       rank_, peer_, peerAddr_.c_str(), channel_, heartbeat_.timeoutMs);
  if (err == -1)
    return ATOLL_ERROR(ncclRemoteError, "socket: rank %d: peer rank %d (%s) closed channel %d", rank_, peer_,
                       peerAddr_.c_str(), channel_);
  return ATOLL_ERROR(ncclRemoteError, "socket: rank %d: %s peer rank %d (%s) channel %d failed: %s", rank_, what, peer_,
                     peerAddr_.c_str(), channel_, std::strerror(err));
}

Result<size_t> SocketConnection::send(const void* data, size_t n) {
  if (n == 0) return size_t{0};
  for (;;) {
    ssize_t rc = ::send(fd_.get(), data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (rc >= 0) return static_cast<size_t>(rc);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      ATOLL_CHECK(checkPeerHost());
      return size_t{0};
    }
    int err = errno;
    if (err == EPIPE || err == ECONNRESET || err == ENOTCONN || err == ETIMEDOUT) return lost("sending to", err);
    return ATOLL_ERROR(ncclSystemError, "socket: rank %d: send to rank %d (%s) channel %d failed: %s", rank_, peer_,
                       peerAddr_.c_str(), channel_, std::strerror(err));
  }
}

Result<size_t> SocketConnection::recvSome(void* dst, size_t n) {
  for (;;) {
    ssize_t rc = ::recv(fd_.get(), dst, n, MSG_DONTWAIT);
    if (rc > 0) return static_cast<size_t>(rc);
    if (rc == 0) {
      closedErr_ = -1;
      return size_t{0};
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      ATOLL_CHECK(checkPeerHost());
      return size_t{0};
    }
    int err = errno;
    if (err == ECONNRESET || err == ETIMEDOUT || err == ENOTCONN || err == EPIPE) {
      closedErr_ = err;
      return size_t{0};
    }
    return ATOLL_ERROR(ncclSystemError, "socket: rank %d: recv from rank %d (%s) channel %d failed: %s", rank_, peer_,
                       peerAddr_.c_str(), channel_, std::strerror(err));
  }
}

Status SocketConnection::fill() {
  // Read until the socket is drained or the ring is full; at most two contiguous pieces per pass.
  if (!ring_) ring_ = std::make_unique_for_overwrite<std::byte[]>(cap_);
  while (closedErr_ == 0 && head_ - tail_ < cap_) {
    const uint64_t off = head_ % cap_;
    const size_t room = static_cast<size_t>(std::min(cap_ - off, cap_ - (head_ - tail_)));
    ATOLL_ASSIGN_OR_RETURN(size_t got, recvSome(ring_.get() + off, room));
    head_ += got;
    if (got < room) break;  // drained for now, or the peer is gone
  }
  return Status::Ok();
}

Result<std::span<const std::byte>> SocketConnection::peek() {
  ATOLL_CHECK(fill());
  const uint64_t off = tail_ % cap_;
  uint64_t end = std::min(head_ & ~uint64_t{7}, tail_ + (cap_ - off));
  if (end <= tail_) {
    if (closedErr_ != 0) return lost("receiving from", closedErr_);
    return std::span<const std::byte>();
  }
  return std::span<const std::byte>(ring_.get() + off, static_cast<size_t>(end - tail_));
}

void SocketConnection::consume(size_t n) { tail_ += n; }

Result<size_t> SocketConnection::receiveInto(void* dst, size_t n) {
  auto* out = static_cast<std::byte*>(dst);
  size_t got = 0;
  while (got < n && head_ > tail_) {  // staged bytes first: they come earlier in the stream
    const uint64_t off = tail_ % cap_;
    const size_t take = static_cast<size_t>(std::min<uint64_t>({n - got, head_ - tail_, cap_ - off}));
    std::memcpy(out + got, ring_.get() + off, take);
    tail_ += take;
    got += take;
  }
  while (got < n && closedErr_ == 0) {
    ATOLL_ASSIGN_OR_RETURN(size_t k, recvSome(out + got, n - got));
    if (k == 0) break;
    got += k;
    head_ += k;
    tail_ += k;
  }
  if (got == 0 && closedErr_ != 0) return lost("receiving from", closedErr_);
  return got;
}

std::string SocketConnection::describe() const {
  char buf[160];
  std::snprintf(buf, sizeof(buf), "socket rank %d <-> %d channel %d (%s)", rank_, peer_, channel_, peerAddr_.c_str());
  return buf;
}

}  // namespace atl::transport::socket

namespace atl::transport::socket {

void SocketConnection::shutdown() {
  // Both directions: the peer reads EOF (ncclRemoteError) and its sends fail.
  if (fd_.valid()) ::shutdown(fd_.get(), SHUT_RDWR);
}

}  // namespace atl::transport::socket
