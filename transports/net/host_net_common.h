// What Atoll's own nets (socket_net.h, ucx/ucx_net.h) share: host memory only, nothing to
// register, the v11 entry points they do not serve, and non-blocking socket transfers for their
// handshakes.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>

#include "base/socket.h"
#include "transports/net/net_abi.h"

namespace atl::net::hostnet {

/// Host memory needs no registration: the handle is the address (a dummy for an empty region).
ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t deregMr(void* comm, void* mhandle);
ncclResult_t regMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**);
ncclResult_t iflush(void*, int, void**, int*, void**, void** request);  // nothing to flush in host memory
ncclResult_t getDeviceMr(void*, void*, void**);
ncclResult_t irecvConsumed(void*, int, void*);
ncclResult_t makeVDevice(int*, abi::VDeviceProps<4>*);
ncclResult_t setNetAttr(void*, abi::NetAttr*);

/// One non-blocking send or recv (EINTR retried): bytes moved, 0 when it would block, or -1 with
/// *err set (ESHUTDOWN: the peer closed its end; ENOTCONN: a dial still under way).
ssize_t io(int fd, bool out, void* p, size_t n, int* err);

uint64_t random64();

/// The handshake listener the UCX and IB nets put in their handles: non-blocking, on `on`.
Result<Fd> listenNonBlocking(const SockAddr& on, SockAddr* bound);
/// A socket whose connect to `to` is under way (non-blocking), or why not.
Result<Fd> startDial(const SockAddr& to);
/// A started dial's failure (an errno), 0 while it is under way or done.
int dialError(int fd);

/// Accepts every connection waiting on a non-blocking listener, as new entries (T has `Fd fd`).
template <class T>
void acceptAll(int listenFd, std::deque<T>* pending) {
  for (;;) {
    const int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    T p;
    p.fd = Fd(fd);
    pending->push_back(std::move(p));
  }
}

/// A handshake connection kept open after the handshake as a liveness watch: the kernel closes
/// it when the peer process dies, however the data itself travels.
struct Watch {
  Fd fd;
  /// Whether the peer closed its end more than `grace` ago (looked at every 2 ms at most).
  bool goneFor(std::chrono::milliseconds grace);

 private:
  bool closed_ = false;
  std::chrono::steady_clock::time_point closedAt_{}, next_{};
};

}  // namespace atl::net::hostnet
