#include "transports/net/host_net_common.h"

#include <sys/socket.h>

#include <cerrno>

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

}  // namespace atl::net::hostnet
