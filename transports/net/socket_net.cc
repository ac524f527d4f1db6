#include "transports/net/socket_net.h"

#include <sys/socket.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <random>
#include <string>

#include "base/debug.h"
#include "base/params.h"
#include "base/socket.h"
#include "transports/net/host_net_common.h"

namespace atl::net {
namespace {

constexpr uint32_t kHandleMagic = 0x534f434b;  // "SOCK"
constexpr int kMaxRequests = 32;               // per comm, as NCCL_NET_MAX_REQUESTS
constexpr int kMaxRecvs = 8;

/// What listen() hands out and connect() is called with (again and again, same memory, until
/// the link is made: the dial's progress lives here).
struct Handle {
  uint32_t magic;
  uint32_t stage;  // 0: not dialled, 1: connect in progress, 2: sending the nonce
  PackedAddr addr;
  uint64_t nonce;  // proves to the listener that the dialler holds this handle
  int32_t fd;
  uint32_t nonceSent;
};
static_assert(sizeof(Handle) <= abi::kHandleMaxSize);

/// A message on the wire: this header, then `size` bytes.
struct Frame {
  uint32_t tag;
  uint32_t zero;
  uint64_t size;
};
static_assert(sizeof(Frame) == 16);

struct Device {
  bool found = false;
  SockAddr addr;
  std::string ifname;
  std::string pciPath;  // the interface's device in sysfs, as NCCL's socket net reports it
  int speedMbps = 10000;  // what NCCL's socket net assumes without a reading
};

const Device& device() {
  static const Device dev = [] {
    Device d;
    auto a = findInterfaceAddress(params::getString(params::Id::SocketIfname), &d.ifname);
    if (a.ok()) {
      d.addr = *a;
      d.found = true;
      // Loopback and veth have no device link and virtio reports speed -1: both keep the defaults.
      char path[PATH_MAX];
      if (::realpath(("/sys/class/net/" + d.ifname + "/device").c_str(), path) != nullptr) d.pciPath = path;
      std::ifstream speed("/sys/class/net/" + d.ifname + "/speed");
      int mbps = 0;
      if (speed >> mbps && mbps > 0) d.speedMbps = mbps;
    }
    return d;
  }();
  return dev;
}

struct Comm;
struct Request {
  Comm* comm = nullptr;
  bool used = false;
  bool send = false;
  int n = 0;
  int finished = 0;  // buffers sent or received
  int sizes[kMaxRecvs] = {};
};

struct Comm {
  Fd fd;
  Request requests[kMaxRequests];
  ncclResult_t error = ncclSuccess;
  Request* take(bool send, int n) {
    for (Request& r : requests)
      if (!r.used) {
        r = Request{};
        r.comm = this, r.used = true, r.send = send, r.n = n;
        return &r;
      }
    return nullptr;  // all in flight: the caller tries again
  }
};

struct SendOp {
  Frame frame;
  const char* data;
  size_t sent;  // of frame and data
  Request* req;
};
struct SendComm : Comm {
  std::deque<SendOp> ops;
};

struct RecvSlot {
  char* data;
  size_t capacity;
  int tag;
  int index;
  Request* req;
};
struct RecvComm : Comm {
  std::deque<RecvSlot> slots;  // posted, in order; the stream fills them in that order
  Frame frame{};
  size_t frameGot = 0;
  size_t payloadGot = 0;
  bool inPayload = false;
};

struct PendingAccept {
  Fd fd;
  uint64_t nonce = 0;
  size_t got = 0;
};
struct ListenComm {
  Fd fd;
  uint64_t nonce = 0;
  std::deque<PendingAccept> pending;
};

using hostnet::io;

ncclResult_t fail(Comm* c, const char* what, int err, bool betweenMessages = false) {
  if (c->error != ncclSuccess) return c->error;
  if (err == ESHUTDOWN && betweenMessages) {
    // A peer that closes between messages is how every link ends (its communicator was
    // destroyed): an error for whoever still waits here, but no warning.
    ATOLL_INFO(log::kNet, "net Socket: the peer closed the connection");
    restoreLastError("net Socket: the peer closed the connection (its communicator is gone)");
    c->error = ncclRemoteError;
  } else {
    c->error = ATOLL_ERROR(ncclRemoteError, "net Socket: %s failed: %s (peer gone?)", what,
                           err == ESHUTDOWN ? "connection closed mid-message" : std::strerror(err))
                   .code();
  }
  return c->error;
}

ncclResult_t progressSend(SendComm* c) {
  while (!c->ops.empty()) {
    SendOp& op = c->ops.front();
    const size_t total = sizeof(Frame) + op.frame.size;
    while (op.sent < total) {
      int err = 0;
      ssize_t r;
      if (op.sent < sizeof(Frame))
        r = io(c->fd.get(), true, reinterpret_cast<char*>(&op.frame) + op.sent, sizeof(Frame) - op.sent, &err);
      else
        r = io(c->fd.get(), true, const_cast<char*>(op.data) + (op.sent - sizeof(Frame)), total - op.sent, &err);
      if (r < 0) return fail(c, "send", err);
      if (r == 0) return ncclSuccess;
      op.sent += static_cast<size_t>(r);
    }
    op.req->sizes[0] = static_cast<int>(op.frame.size);
    ++op.req->finished;
    c->ops.pop_front();
  }
  return ncclSuccess;
}

ncclResult_t progressRecv(RecvComm* c) {
  while (!c->slots.empty()) {  // a message is read only once a buffer waits for it
    RecvSlot& s = c->slots.front();
    int err = 0;
    if (!c->inPayload) {
      const ssize_t r = io(c->fd.get(), false, reinterpret_cast<char*>(&c->frame) + c->frameGot,
                           sizeof(Frame) - c->frameGot, &err);
      if (r < 0) return fail(c, "recv", err, c->frameGot == 0);
      if (r == 0) return ncclSuccess;
      c->frameGot += static_cast<size_t>(r);
      if (c->frameGot < sizeof(Frame)) continue;
      c->frameGot = 0;
      if (static_cast<int>(c->frame.tag) != s.tag || c->frame.size > s.capacity || c->frame.zero != 0) {
        c->error = ATOLL_ERROR(ncclInvalidUsage,
                               "net Socket: a message of %llu bytes with tag %u arrived for a receive of at most %zu "
                               "bytes with tag %d",
                               static_cast<unsigned long long>(c->frame.size), c->frame.tag, s.capacity, s.tag)
                       .code();
        return c->error;
      }
      c->inPayload = true;
      c->payloadGot = 0;
    }
    while (c->payloadGot < c->frame.size) {
      const ssize_t r = io(c->fd.get(), false, s.data + c->payloadGot, c->frame.size - c->payloadGot, &err);
      if (r < 0) return fail(c, "recv", err);
      if (r == 0) return ncclSuccess;
      c->payloadGot += static_cast<size_t>(r);
    }
    c->inPayload = false;
    s.req->sizes[s.index] = static_cast<int>(c->frame.size);
    ++s.req->finished;
    c->slots.pop_front();
  }
  return ncclSuccess;
}

// --- the ncclNet_v11 entry points ---

ncclResult_t init(void** ctx, uint64_t, abi::CommConfig*, abi::Logger, abi::ProfilerCallback) {
  static int token;
  *ctx = &token;
  return ncclSuccess;
}

ncclResult_t devices(int* ndev) {
  *ndev = device().found ? 1 : 0;
  return ncclSuccess;
}

ncclResult_t getProperties(int dev, abi::Props11* p) {
  if (dev != 0 || !device().found) return ncclInvalidArgument;
  static std::string name = device().ifname;
  std::memset(p, 0, sizeof(*p));
  p->name = name.data();
  static std::string pciPath = device().pciPath;
  p->pciPath = pciPath.empty() ? nullptr : pciPath.data();
  p->guid = 0;
  p->ptrSupport = abi::kPtrHost;
  p->regIsGlobal = 1;
  p->speed = device().speedMbps;
  p->latency = 0;
  p->maxComms = 65536;
  p->maxRecvs = kMaxRecvs;
  p->netDeviceType = 0;  // host
  p->maxP2pBytes = size_t{1} << 31;
  p->maxCollBytes = size_t{1} << 31;
  p->maxMultiRequestSize = 1;
  return ncclSuccess;
}

ncclResult_t listen(void*, int dev, void* opaqueHandle, void** listenComm) {
  if (dev != 0 || !device().found) return ncclInvalidArgument;
  SockAddr bound;
  auto fd = listenOn(device().addr, 128, &bound);
  if (!fd.ok()) return fd.status().code();
  setNonBlocking(fd->get());
  auto* l = new ListenComm;
  l->fd = std::move(*fd);
  l->nonce = std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32);
  Handle h{};
  h.magic = kHandleMagic;
  h.addr = pack(bound);
  h.nonce = l->nonce;
  h.fd = -1;
  std::memset(opaqueHandle, 0, abi::kHandleMaxSize);
  std::memcpy(opaqueHandle, &h, sizeof(h));
  *listenComm = l;
  return ncclSuccess;
}

ncclResult_t connect(void*, int dev, void* opaqueHandle, void** sendComm, abi::DeviceHandle**) {
  *sendComm = nullptr;
  if (dev != 0) return ncclInvalidArgument;
  Handle h;
  std::memcpy(&h, opaqueHandle, sizeof(h));
  if (h.magic != kHandleMagic) return ncclInvalidArgument;
  auto save = [&] { std::memcpy(opaqueHandle, &h, sizeof(h)); };
  if (h.stage == 0) {
    const SockAddr addr = unpack(h.addr);
    const int fd = ::socket(addr.storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return ATOLL_ERROR(ncclSystemError, "net Socket: socket(): %s", std::strerror(errno)).code();
    if (::connect(fd, addr.raw(), addr.length) != 0 && errno != EINPROGRESS) {
      const int e = errno;
      ::close(fd);
      return ATOLL_ERROR(ncclRemoteError, "net Socket: connect to %s: %s", addr.toString().c_str(), std::strerror(e))
          .code();
    }
    h.fd = fd;
    h.stage = 1;
    save();
  }
  if (h.stage == 1) {
    int err = 0;
    socklen_t len = sizeof(err);
    if (::getsockopt(h.fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    if (err != 0) {
      ::close(h.fd);
      h.fd = -1;
      h.stage = 0;
      save();
      return ATOLL_ERROR(ncclRemoteError, "net Socket: connect: %s", std::strerror(err)).code();
    }
    // Connected once the socket is writable; until then the nonce send below just would block.
    h.stage = 2;
    h.nonceSent = 0;
    save();
  }
  int err = 0;
  const ssize_t r = io(h.fd, true, reinterpret_cast<char*>(&h.nonce) + h.nonceSent, sizeof(h.nonce) - h.nonceSent, &err);
  if (r < 0) {
    if (err == ENOTCONN) return ncclSuccess;  // handshake still under way
    ::close(h.fd);
    h = Handle{};
    return ATOLL_ERROR(ncclRemoteError, "net Socket: connect: %s", std::strerror(err)).code();
  }
  h.nonceSent += static_cast<uint32_t>(r);
  if (h.nonceSent < sizeof(h.nonce)) {
    save();
    return ncclSuccess;
  }
  auto* c = new SendComm;
  c->fd = Fd(h.fd);
  setNoDelay(h.fd);
  h.stage = 0;  // the handle may be used to dial again
  h.fd = -1;
  save();
  *sendComm = c;
  return ncclSuccess;
}

ncclResult_t accept(void* listenComm, void** recvComm, abi::DeviceHandle**) {
  *recvComm = nullptr;
  auto* l = static_cast<ListenComm*>(listenComm);
  for (;;) {  // take every dial that is waiting
    const int fd = ::accept4(l->fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) break;
    l->pending.push_back(PendingAccept{Fd(fd)});
  }
  for (auto it = l->pending.begin(); it != l->pending.end();) {
    int err = 0;
    const ssize_t r = io(it->fd.get(), false, reinterpret_cast<char*>(&it->nonce) + it->got, sizeof(it->nonce) - it->got, &err);
    if (r < 0 || (it->got + static_cast<size_t>(r) == sizeof(it->nonce) && it->nonce != l->nonce)) {
      it = l->pending.erase(it);  // gone, or not a holder of our handle: dropped
      continue;
    }
    it->got += static_cast<size_t>(r);
    if (it->got == sizeof(it->nonce)) {
      auto* c = new RecvComm;
      c->fd = std::move(it->fd);
      setNoDelay(c->fd.get());
      l->pending.erase(it);
      *recvComm = c;
      return ncclSuccess;
    }
    ++it;
  }
  return ncclSuccess;
}

ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void*, void*, void** request) {
  *request = nullptr;
  auto* c = static_cast<SendComm*>(sendComm);
  if (c->error != ncclSuccess) return c->error;
  if (size > static_cast<size_t>(INT32_MAX)) return ncclInvalidArgument;  // test() reports sizes as int
  Request* r = c->take(true, 1);
  if (r == nullptr) return ncclSuccess;
  c->ops.push_back(SendOp{Frame{static_cast<uint32_t>(tag), 0, size}, static_cast<const char*>(data), 0, r});
  *request = r;
  (void)progressSend(c);  // posted either way; a failure is reported by test()
  return ncclSuccess;
}

ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void**, void**, void** request) {
  *request = nullptr;
  auto* c = static_cast<RecvComm*>(recvComm);
  if (c->error != ncclSuccess) return c->error;
  if (n < 1 || n > kMaxRecvs) return ncclInvalidArgument;
  Request* r = c->take(false, n);
  if (r == nullptr) return ncclSuccess;
  for (int i = 0; i < n; ++i) c->slots.push_back(RecvSlot{static_cast<char*>(data[i]), sizes[i], tags[i], i, r});
  *request = r;
  (void)progressRecv(c);  // posted either way; a failure is reported by test()
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  Comm* c = r->comm;
  const ncclResult_t e = r->send ? progressSend(static_cast<SendComm*>(c)) : progressRecv(static_cast<RecvComm*>(c));
  // A request that completed before the comm failed is reported done: one progress call fills
  // several receives and may then meet the peer's close, and what came before it is the peer's.
  *done = r->finished == r->n ? 1 : 0;
  if (!*done) return e;
  if (sizes != nullptr)
    for (int i = 0; i < r->n; ++i) sizes[i] = r->sizes[i];
  r->used = false;
  return ncclSuccess;
}

ncclResult_t closeSend(void* sendComm) {
  delete static_cast<SendComm*>(sendComm);
  return ncclSuccess;
}
ncclResult_t closeRecv(void* recvComm) {
  delete static_cast<RecvComm*>(recvComm);
  return ncclSuccess;
}
ncclResult_t closeListen(void* listenComm) {
  delete static_cast<ListenComm*>(listenComm);
  return ncclSuccess;
}
ncclResult_t finalize(void*) { return ncclSuccess; }

}  // namespace

const abi::Net11 kSocketNet = {
    "Socket",          init,     devices,          getProperties,   listen,     connect,
    accept,            hostnet::regMr,   hostnet::regMrDmaBuf, hostnet::deregMr, isend, irecv,
    hostnet::iflush,   test,     closeSend,        closeRecv,       closeListen, hostnet::getDeviceMr,
    hostnet::irecvConsumed, hostnet::makeVDevice, finalize, hostnet::setNetAttr,
};

}  // namespace atl::net
