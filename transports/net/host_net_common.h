// What Atoll's own nets (socket_net.h, ucx/ucx_net.h) share: host memory only, nothing to
// register, the v11 entry points they do not serve, and non-blocking socket transfers for their
// handshakes.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

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

}  // namespace atl::net::hostnet
