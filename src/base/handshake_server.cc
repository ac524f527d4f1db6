#include "base/handshake_server.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/debug.h"
#include "base/fd_limit.h"
#include "base/hmac.h"

namespace atl::net {
namespace {
// At most this many connections are read at once, so a flood cannot exhaust fds. Beyond it, new
// ones wait in the kernel's listen backlog until slots free up (each slot is freed within the
// handshake deadline): refusing them instead would fail real ranks when thousands join at once.
constexpr size_t kMaxInProgress = 512;
}  // namespace

HandshakeServer::HandshakeServer(Fd listenFd, Options options, HeaderCheck check, OnComplete done)
    : listen_(std::move(listenFd)), opt_(std::move(options)), check_(std::move(check)), done_(std::move(done)) {}

void HandshakeServer::reject(const Conn& c, const char* reason) {
  ATOLL_WARN("%s: rejected connection from %s: %s", opt_.name.c_str(), c.peer.c_str(), reason);
}

void HandshakeServer::acceptNew() {
  while (conns_.size() < kMaxInProgress) {
    SockAddr peer;
    peer.length = sizeof(peer.storage);
    int fd = accept4(listen_.get(), reinterpret_cast<sockaddr*>(&peer.storage), &peer.length,
                     SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EPROTO) continue;
      if (errno == EMFILE || errno == ENFILE) {
        // The connection stays queued and the listener readable: pause accepting rather than spin,
        // and say once why clients are waiting.
        if (!warnedFds_) ATOLL_WARN("%s: cannot accept: %s%s", opt_.name.c_str(), strerror(errno), fdHint(errno).c_str());
        warnedFds_ = true;
        fdError_ = errno;
        paused_ = true;
        resume_ = Deadline::afterMs(20);
      }
      return;  // EAGAIN: drained
    }
    Conn c;
    c.fd = Fd(fd);
    c.peer = peer.toString();
    setNoDelay(fd);
    if (opt_.sendNonce) {
      randomBytes(c.nonce);
      ssize_t rc;
      do {
        rc = ::send(fd, c.nonce.data(), c.nonce.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      } while (rc < 0 && errno == EINTR);
      if (rc != static_cast<ssize_t>(c.nonce.size())) {
        reject(c, "could not send challenge");
        continue;
      }
    }
    c.header.resize(opt_.headerSize);
    c.deadline = Deadline::afterMs(opt_.headerTimeoutMs);
    conns_.push_back(std::move(c));
  }
}

bool HandshakeServer::advance(Conn& c) {
  for (;;) {
    std::vector<uint8_t>& buf = c.inBody ? c.body : c.header;
    if (c.have == buf.size()) {
      if (!c.inBody) {
        std::string reason;
        std::optional<size_t> bodyLen = check_(c, &reason);
        if (!bodyLen) {
          reject(c, reason.c_str());
          return false;
        }
        c.inBody = true;
        c.have = 0;
        c.body.resize(*bodyLen);
        c.deadline = Deadline::afterMs(opt_.bodyTimeoutMs);
        continue;
      }
      done_(std::move(c));
      return false;
    }
    ssize_t rc = ::recv(c.fd.get(), buf.data() + c.have, buf.size() - c.have, MSG_DONTWAIT);
    if (rc > 0) {
      c.have += static_cast<size_t>(rc);
      continue;
    }
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (c.deadline.expired()) {
        reject(c, c.inBody ? "timed out sending its payload" : "timed out before authenticating");
        return false;
      }
      return true;
    }
    std::string why = rc == 0 ? "closed the connection" : std::string("recv failed: ") + strerror(errno);
    why += " after " + std::to_string(c.have) + " of " + std::to_string(buf.size()) + (c.inBody ? " payload" : " header");
    why += " bytes";
    reject(c, why.c_str());
    return false;
  }
}

void HandshakeServer::pump(int timeoutMs) {
  std::vector<pollfd> fds;
  fds.reserve(conns_.size() + 1);
  // With every slot busy (or descriptors out) the listener is left out of the poll set: its
  // backlog waits, and the poll does not spin.
  if (paused_ && resume_.expired()) paused_ = false;
  const bool accepting = conns_.size() < kMaxInProgress && !paused_;
  fds.push_back({listen_.get(), static_cast<short>(accepting ? POLLIN : 0), 0});
  for (const auto& c : conns_) fds.push_back({c.fd.get(), POLLIN, 0});
  int rc = poll(fds.data(), fds.size(), paused_ ? std::min(timeoutMs, resume_.remainingMs(20)) : timeoutMs);
  if (rc < 0 && errno != EINTR) {
    ATOLL_WARN("%s: poll failed: %s", opt_.name.c_str(), strerror(errno));
    return;
  }
  // Every connection is advanced each round (not only the readable ones) so deadlines are enforced.
  std::vector<Conn> keep;
  keep.reserve(conns_.size());
  for (auto& c : conns_) {
    if (advance(c)) keep.push_back(std::move(c));
  }
  conns_ = std::move(keep);
  if (rc > 0 && (fds[0].revents & POLLIN)) acceptNew();
}

}  // namespace atl::net
