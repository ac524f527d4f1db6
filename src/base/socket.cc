// TCP helpers. Every wait is a poll() bounded by the caller's deadline and sliced so the abort flag
// is noticed within ~100 ms; sockets are close-on-exec so forked launchers do not inherit them.
#include "base/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "base/debug.h"
#include "base/fd_limit.h"

namespace atl::net {
namespace {

constexpr int kPollSliceMs = 100;

bool isLoopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
  }
  return false;
}

bool isLinkLocal6(const sockaddr* sa) {
  return sa->sa_family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr);
}

SockAddr fromSockaddr(const sockaddr* sa) {
  SockAddr a;
  a.length = sa->sa_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  std::memcpy(&a.storage, sa, a.length);
  a.setPort(0);
  return a;
}

std::string peerName(int fd) {
  SockAddr a;
  a.length = sizeof(a.storage);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a.storage), &a.length) != 0) return "<unknown peer>";
  return a.toString();
}

// Parsed NCCL_SOCKET_IFNAME: "^" excludes, "=" matches whole names, otherwise prefixes.
struct IfSpec {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;

  bool matches(const std::string& ifname) const {
    bool hit = false;
    for (const auto& n : names) {
      if (exact ? ifname == n : ifname.compare(0, n.size(), n) == 0) {
        hit = true;
        break;
      }
    }
    return exclude ? !hit : hit;
  }
};

IfSpec parseIfSpec(const std::string& text) {
  IfSpec s;
  size_t i = 0;
  while (i < text.size() && (text[i] == '^' || text[i] == '=')) {
    if (text[i] == '^') s.exclude = true;
    if (text[i] == '=') s.exact = true;
    ++i;
  }
  std::string cur;
  for (; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == ',') {
      if (!cur.empty()) s.names.push_back(cur);
      cur.clear();
    } else if (text[i] != ' ') {
      cur.push_back(text[i]);
    }
  }
  return s;
}

struct Candidate {
  std::string name;
  SockAddr addr;
  bool loopback;
  int family;
};

// Waits until `fd` is ready for `events`. Returns Ok when ready; timeouts and aborts are errors.
Status waitFd(int fd, short events, Deadline deadline, const AbortFlag* abort, const char* what, bool connected) {
  for (;;) {
    if (aborted(abort)) return ATOLL_ERROR(ncclSystemError, "%s aborted", what);
    if (deadline.expired())
      return ATOLL_ERROR(ncclSystemError, "%s%s%s timed out", what, connected ? " with " : "",
                         connected ? peerName(fd).c_str() : "");
    pollfd p{fd, events, 0};
    int rc = poll(&p, 1, deadline.remainingMs(kPollSliceMs));
    if (rc < 0) {
      if (errno == EINTR) continue;
      return ATOLL_ERROR(ncclSystemError, "%s: poll failed: %s", what, strerror(errno));
    }
    if (rc > 0) return Status::Ok();
  }
}

// Sleeps up to `ms`, waking early for the deadline or abort.
void napUntil(int ms, Deadline deadline, const AbortFlag* abort) {
  while (ms > 0 && !aborted(abort) && !deadline.expired()) {
    int step = std::min({ms, 20, deadline.remainingMs(20)});
    std::this_thread::sleep_for(std::chrono::milliseconds(step > 0 ? step : 1));
    ms -= step > 0 ? step : 1;
  }
}

bool retryableConnectError(int err) {
  return err == ECONNREFUSED || err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH || err == ECONNRESET ||
         err == EAGAIN || err == ECONNABORTED;
}

}  // namespace

uint16_t SockAddr::port() const {
  if (storage.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&storage)->sin_port);
  if (storage.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_port);
  return 0;
}

void SockAddr::setPort(uint16_t port) {
  if (storage.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
  if (storage.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string SockAddr::toString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  if (storage.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&storage)->sin_addr, buf, sizeof(buf));
    return std::string(buf) + ":" + std::to_string(port());
  }
  if (storage.ss_family == AF_INET6) {
    inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(&storage)->sin6_addr, buf, sizeof(buf));
    // Formatted in one go: GCC 12 at -O3 flags `"[" + std::string(...)` with a false -Wrestrict.
    char out[INET6_ADDRSTRLEN + 16];
    std::snprintf(out, sizeof(out), "[%s]:%u", buf, static_cast<unsigned>(port()));
    return out;
  }
  return "<invalid address>";
}

PackedAddr pack(const SockAddr& a) {
  PackedAddr p{};
  p.family = a.storage.ss_family;
  if (a.storage.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&a.storage);
    p.port = in->sin_port;
    std::memcpy(p.addr, &in->sin_addr, 4);
  } else if (a.storage.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&a.storage);
    p.port = in6->sin6_port;
    std::memcpy(p.addr, &in6->sin6_addr, 16);
  }
  return p;
}

SockAddr unpack(const PackedAddr& p) {
  SockAddr a;
  if (p.family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&a.storage);
    in->sin_family = AF_INET;
    in->sin_port = p.port;
    std::memcpy(&in->sin_addr, p.addr, 4);
    a.length = sizeof(sockaddr_in);
  } else if (p.family == AF_INET6) {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = p.port;
    std::memcpy(&in6->sin6_addr, p.addr, 16);
    a.length = sizeof(sockaddr_in6);
  }
  return a;
}

Result<SockAddr> parseHostPort(const std::string& text) {
  std::string host, port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return ATOLL_ERROR(ncclInvalidArgument, "bad address '%s': expected [ipv6]:port", text.c_str());
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos)
      return ATOLL_ERROR(ncclInvalidArgument, "bad address '%s': expected host:port", text.c_str());
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (host.empty()) return ATOLL_ERROR(ncclInvalidArgument, "bad address '%s': empty host", text.c_str());
  char* end = nullptr;
  errno = 0;
  long portNum = port.empty() ? -1 : strtol(port.c_str(), &end, 10);
  if (port.empty() || errno != 0 || *end != '\0' || portNum < 0 || portNum > 65535)
    return ATOLL_ERROR(ncclInvalidArgument, "bad address '%s': invalid port '%s'", text.c_str(), port.c_str());

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr)
    return ATOLL_ERROR(ncclInvalidArgument, "cannot resolve '%s': %s", host.c_str(), gai_strerror(rc));
  // Prefer IPv4 when a name resolves to both, matching the interface default.
  const addrinfo* pick = res;
  for (const addrinfo* r = res; r != nullptr; r = r->ai_next) {
    if (r->ai_family == AF_INET) {
      pick = r;
      break;
    }
  }
  SockAddr a = fromSockaddr(pick->ai_addr);
  freeaddrinfo(res);
  a.setPort(static_cast<uint16_t>(portNum));
  return a;
}

Result<SockAddr> findInterfaceAddress(const std::string& spec, std::string* ifname) {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0)
    return ATOLL_ERROR(ncclSystemError, "getifaddrs failed: %s%s", strerror(errno), fdHint(errno).c_str());
  std::vector<Candidate> cands;
  std::string seen;
  for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0) continue;
    int fam = i->ifa_addr->sa_family;
    if (fam != AF_INET && fam != AF_INET6) continue;
    // Link-local IPv6 needs a scope id, which PackedAddr cannot carry.
    if (isLinkLocal6(i->ifa_addr)) continue;
    if (seen.find(std::string(" ") + i->ifa_name + " ") == std::string::npos) seen += std::string(" ") + i->ifa_name + " ";
    cands.push_back({i->ifa_name, fromSockaddr(i->ifa_addr), isLoopback(i->ifa_addr), fam});
  }
  freeifaddrs(list);

  IfSpec s = parseIfSpec(spec);
  bool filtered = !s.names.empty();
  // Pass order: non-loopback IPv4, non-loopback IPv6, loopback IPv4, loopback IPv6. A positive spec
  // takes interfaces in that order too, so "lo" still works.
  for (int pass = 0; pass < 4; ++pass) {
    bool wantLoop = pass >= 2;
    int wantFam = (pass % 2 == 0) ? AF_INET : AF_INET6;
    for (const auto& c : cands) {
      if (c.loopback != wantLoop || c.family != wantFam) continue;
      if (filtered && !s.matches(c.name)) continue;
      if (ifname != nullptr) *ifname = c.name;
      return c.addr;
    }
  }
  if (!filtered) {
    // No usable interface at all (containers without lo configured): loopback still routes.
    SockAddr a;
    auto* in = reinterpret_cast<sockaddr_in*>(&a.storage);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.length = sizeof(sockaddr_in);
    if (ifname != nullptr) *ifname = "lo";
    return a;
  }
  return ATOLL_ERROR(ncclInvalidUsage, "NCCL_SOCKET_IFNAME='%s' matches no up interface with an address (have:%s)",
                     spec.c_str(), seen.c_str());
}

void Fd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

void setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

static void setBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags >= 0) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

void setNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Result<Fd> listenOn(const SockAddr& addr, int backlog, SockAddr* bound) {
  if (!addr.valid()) return ATOLL_ERROR(ncclInvalidArgument, "listenOn: invalid address");
  Fd fd(socket(addr.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ATOLL_ERROR(ncclSystemError, "socket() failed: %s%s", strerror(errno), fdHint(errno).c_str());
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd.get(), addr.raw(), addr.length) != 0)
    return ATOLL_ERROR(ncclSystemError, "bind to %s failed: %s", addr.toString().c_str(), strerror(errno));
  if (listen(fd.get(), backlog) != 0)
    return ATOLL_ERROR(ncclSystemError, "listen on %s failed: %s", addr.toString().c_str(), strerror(errno));
  // Non-blocking so an accept after poll() cannot stall if the pending connection was reset meanwhile.
  setNonBlocking(fd.get());
  if (bound != nullptr) {
    SockAddr b;
    b.length = sizeof(b.storage);
    if (getsockname(fd.get(), reinterpret_cast<sockaddr*>(&b.storage), &b.length) != 0)
      return ATOLL_ERROR(ncclSystemError, "getsockname failed: %s", strerror(errno));
    *bound = b;
  }
  return fd;
}

Result<Fd> connectTo(const SockAddr& addr, Deadline deadline, const AbortFlag* abort, ConnectRetry retry) {
  if (!addr.valid()) return ATOLL_ERROR(ncclInvalidArgument, "connectTo: invalid address");
  int backoffMs = 5;
  int lastErr = 0;
  for (;;) {
    if (aborted(abort)) return ATOLL_ERROR(ncclSystemError, "connect to %s aborted", addr.toString().c_str());
    if (deadline.expired())
      return ATOLL_ERROR(ncclSystemError, "connect to %s timed out (last error: %s)", addr.toString().c_str(),
                         lastErr != 0 ? strerror(lastErr) : "none");
    Fd fd(socket(addr.storage.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) return ATOLL_ERROR(ncclSystemError, "socket() failed: %s%s", strerror(errno), fdHint(errno).c_str());
    int rc;
    do {
      rc = ::connect(fd.get(), addr.raw(), addr.length);
    } while (rc != 0 && errno == EINTR);
    int err = rc == 0 ? 0 : errno;
    if (err == EINPROGRESS) {
      // Wait for completion in slices; an expired deadline ends the attempt.
      for (;;) {
        if (aborted(abort)) return ATOLL_ERROR(ncclSystemError, "connect to %s aborted", addr.toString().c_str());
        if (deadline.expired())
          return ATOLL_ERROR(ncclSystemError, "connect to %s timed out", addr.toString().c_str());
        pollfd p{fd.get(), POLLOUT, 0};
        int prc = poll(&p, 1, deadline.remainingMs(kPollSliceMs));
        if (prc < 0 && errno != EINTR)
          return ATOLL_ERROR(ncclSystemError, "poll failed: %s", strerror(errno));
        if (prc > 0) break;
      }
      socklen_t len = sizeof(err);
      if (getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
    if (err == 0) {
      setBlocking(fd.get());
      setNoDelay(fd.get());
      return fd;
    }
    if (!retryableConnectError(err) || retry == ConnectRetry::Never)
      return ATOLL_ERROR(ncclSystemError, "connect to %s failed: %s", addr.toString().c_str(), strerror(err));
    lastErr = err;
    fd.reset();
    napUntil(backoffMs, deadline, abort);
    backoffMs = std::min(backoffMs * 2, 200);
  }
}

Result<Fd> acceptOne(int listenFd, Deadline deadline, const AbortFlag* abort, SockAddr* peer) {
  for (;;) {
    ATOLL_CHECK(waitFd(listenFd, POLLIN, deadline, abort, "accept", false));
    SockAddr a;
    a.length = sizeof(a.storage);
    int fd = accept4(listenFd, reinterpret_cast<sockaddr*>(&a.storage), &a.length, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK || errno == ECONNABORTED || errno == EPROTO)
        continue;
      return ATOLL_ERROR(ncclSystemError, "accept failed: %s%s", strerror(errno), fdHint(errno).c_str());
    }
    setNoDelay(fd);
    if (peer != nullptr) *peer = a;
    return Fd(fd);
  }
}

Status sendAll(int fd, const void* data, size_t n, Deadline deadline, const AbortFlag* abort) {
  auto* p = static_cast<const uint8_t*>(data);
  size_t done = 0;
  while (done < n) {
    ssize_t rc = ::send(fd, p + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (rc > 0) {
      done += static_cast<size_t>(rc);
      continue;
    }
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      ATOLL_CHECK(waitFd(fd, POLLOUT, deadline, abort, "send", true));
      continue;
    }
    int err = rc < 0 ? errno : EPIPE;
    if (err == EPIPE || err == ECONNRESET)
      return ATOLL_ERROR(ncclRemoteError, "connection to %s lost while sending: %s", peerName(fd).c_str(),
                         strerror(err));
    return ATOLL_ERROR(ncclSystemError, "send to %s failed: %s", peerName(fd).c_str(), strerror(err));
  }
  return Status::Ok();
}

Status recvAll(int fd, void* data, size_t n, Deadline deadline, const AbortFlag* abort) {
  auto* p = static_cast<uint8_t*>(data);
  size_t done = 0;
  while (done < n) {
    ssize_t rc = ::recv(fd, p + done, n - done, MSG_DONTWAIT);
    if (rc > 0) {
      done += static_cast<size_t>(rc);
      continue;
    }
    if (rc == 0)
      return ATOLL_ERROR(ncclRemoteError, "connection closed by %s (received %zu of %zu bytes)",
                         peerName(fd).c_str(), done, n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      ATOLL_CHECK(waitFd(fd, POLLIN, deadline, abort, "recv", true));
      continue;
    }
    if (errno == ECONNRESET)
      return ATOLL_ERROR(ncclRemoteError, "connection reset by %s (received %zu of %zu bytes)",
                         peerName(fd).c_str(), done, n);
    return ATOLL_ERROR(ncclSystemError, "recv from %s failed: %s", peerName(fd).c_str(), strerror(errno));
  }
  return Status::Ok();
}

}  // namespace atl::net
