// TCP helpers shared by the bootstrap and the socket transport: addresses, interface selection
// (NCCL_SOCKET_IFNAME syntax), and connect/accept/send/recv that honour a deadline and an abort flag.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "base/deadline.h"
#include "base/status.h"

namespace atl::net {

/// A socket address that is plain data (it travels inside ncclUniqueId and peer tables).
struct SockAddr {
  sockaddr_storage storage{};
  socklen_t length = 0;

  bool valid() const { return length > 0; }
  uint16_t port() const;
  void setPort(uint16_t port);
  const sockaddr* raw() const { return reinterpret_cast<const sockaddr*>(&storage); }
  std::string toString() const;  // "1.2.3.4:5678" or "[::1]:5678"
};

/// Compact 20-byte wire form (family, port, 16 address bytes) used inside the 128-byte unique id.
struct PackedAddr {
  uint16_t family;
  uint16_t port;  // network order
  uint8_t addr[16];
};
static_assert(sizeof(PackedAddr) == 20);
static_assert(std::has_unique_object_representations_v<PackedAddr>, "no padding: sent as its bytes");
PackedAddr pack(const SockAddr& a);
SockAddr unpack(const PackedAddr& p);

/// Parses "host:port", "ip:port" or "[ipv6]:port" (host names resolved with getaddrinfo).
Result<SockAddr> parseHostPort(const std::string& text);

/// Picks the address to bind/advertise, honouring NCCL_SOCKET_IFNAME: a comma list of prefixes,
/// '^' to exclude, '=' for exact names. Empty spec: first up non-loopback IPv4/IPv6 interface,
/// else loopback. Port is 0. `ifname` (optional) receives the chosen interface's name.
Result<SockAddr> findInterfaceAddress(const std::string& spec, std::string* ifname = nullptr);

/// Owning file descriptor.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

/// Listens on `addr` (port 0 = ephemeral); `bound` receives the actual address. SO_REUSEADDR set.
Result<Fd> listenOn(const SockAddr& addr, int backlog, SockAddr* bound);
/// Whether connectTo retries a refused or unreachable peer (one that is not listening yet).
enum class ConnectRetry { UntilDeadline, Never };
/// Connects, retrying refused/unreachable attempts with backoff until the deadline (or, with
/// ConnectRetry::Never, failing at once: for peers that listened once and may have exited since).
Result<Fd> connectTo(const SockAddr& addr, Deadline deadline, const AbortFlag* abort,
                     ConnectRetry retry = ConnectRetry::UntilDeadline);
/// Waits for one connection on a listening socket. Timeout -> ncclSystemError, abort -> ncclSystemError.
Result<Fd> acceptOne(int listenFd, Deadline deadline, const AbortFlag* abort, SockAddr* peer = nullptr);
/// Blocking-with-deadline full transfers; a peer that closes yields ncclRemoteError.
Status sendAll(int fd, const void* data, size_t n, Deadline deadline, const AbortFlag* abort);
Status recvAll(int fd, void* data, size_t n, Deadline deadline, const AbortFlag* abort);

void setNonBlocking(int fd);
void setNoDelay(int fd);

}  // namespace atl::net
