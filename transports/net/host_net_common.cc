#include "transports/net/host_net_common.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "base/debug.h"
#include "base/hmac.h"

namespace atl::net::hostnet {

ncclResult_t regMr(void*, void* data, size_t size, int type, void** mhandle) {
  if (type != abi::kPtrHost || (data == nullptr && size > 0)) return ncclInvalidArgument;
  *mhandle = data != nullptr ? data : reinterpret_cast<void*>(1);
  return ncclSuccess;
}
ncclResult_t deregMr(void*, void*) { return ncclSuccess; }
ncclResult_t regMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**) { return ncclInvalidUsage; }
ncclResult_t iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;
  return ncclSuccess;
}
ncclResult_t getDeviceMr(void*, void*, void**) { return ncclInvalidUsage; }
ncclResult_t irecvConsumed(void*, int, void*) { return ncclSuccess; }
ncclResult_t makeVDevice(int*, abi::VDeviceProps<4>*) { return ncclInvalidUsage; }
ncclResult_t setNetAttr(void*, abi::NetAttr*) { return ncclSuccess; }

ssize_t io(int fd, bool out, void* p, size_t n, int* err) {
  for (;;) {
    const ssize_t r = out ? ::send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT) : ::recv(fd, p, n, MSG_DONTWAIT);
    if (r > 0) return r;
    if (r == 0 && !out) {
      *err = ESHUTDOWN;
      return -1;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    *err = r < 0 ? errno : EPIPE;
    return -1;
  }
}

uint64_t random64() {
  uint64_t v = 0;
  randomBytes(std::span(reinterpret_cast<uint8_t*>(&v), sizeof(v)));
  return v;
}

Result<Fd> listenNonBlocking(const SockAddr& on, SockAddr* bound) {
  auto fd = listenOn(on, 128, bound);
  if (fd.ok()) setNonBlocking(fd->get());
  return fd;
}

Result<Fd> startDial(const SockAddr& to) {
  const int fd = ::socket(to.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return ATOLL_ERROR(ncclSystemError, "socket(): %s", std::strerror(errno));
  Fd owned(fd);
  if (::connect(fd, to.raw(), to.length) != 0 && errno != EINPROGRESS)
    return ATOLL_ERROR(ncclRemoteError, "connect to %s: %s", to.toString().c_str(), std::strerror(errno));
  return owned;
}

int dialError(int fd) {
  int err = 0;
  socklen_t len = sizeof(err);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  return err;
}

bool Watch::goneFor(std::chrono::milliseconds grace) {
  const auto now = std::chrono::steady_clock::now();
  if (!closed_ && now >= next_) {
    next_ = now + std::chrono::milliseconds(2);
    char b;
    const ssize_t r = ::recv(fd.get(), &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      closed_ = true;
      closedAt_ = now;
    }
  }
  return closed_ && now - closedAt_ > grace;
}

}  // namespace atl::net::hostnet
