// A network plugin for the host's tests, built once per ABI version (ATOLL_TEST_NET_VERSION 8, 10
// or 11, each exporting only ncclNetPlugin_v<N>). Ranks are in one process: listen registers an
// endpoint, connect pairs with it, messages are copied into the receiver's queue and matched by tag
// in order. It behaves the way real plugins do at the contract's edges, so the host must cope:
//   - its exported struct is named "AtollTest-uninitialised" until init rewrites it;
//   - connect and accept return success with a null comm for their first two calls;
//   - every other isend/irecv returns a null request ("try again");
//   - test leaves a send's sizes unset;
//   - ATOLL_TESTNET_FAIL_INIT=1 makes init fail, ATOLL_TESTNET_NDEVS=N sets the device count;
//   - ATOLL_TESTNET_STRAND_RECVS=1 plays a transport that cannot stop a receive it has begun (UCX's
//     matched rendezvous): closeRecv with receives posted fails, and the next listen writes into
//     their buffers.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "transports/net/net_abi.h"

namespace abi = atl::net::abi;

namespace {

constexpr uint32_t kMagic = 0x7e57ae75;
constexpr int kMaxRecvs = 4;

struct Message {
  int tag;
  std::vector<char> bytes;
};
struct Queue {
  std::deque<Message> messages;
};
struct Listen {
  int id;
  std::deque<std::shared_ptr<Queue>> pending;  // connections not accepted yet
  int acceptCalls = 0;
};
struct Request;
// Each comm owns the requests it handed out that were not completed by test(): a host may close
// a comm with receives still posted (Atoll's net links always keep some), as NCCL does at abort.
struct Send {
  std::shared_ptr<Queue> queue;
  std::set<Request*> pending;
  ~Send();
};
struct Recv {
  std::shared_ptr<Queue> queue;
  std::set<Request*> pending;
  ~Recv();
};
struct Request {
  bool isSend = false;
  Send* send = nullptr;
  Recv* recv = nullptr;
  int n = 0;
  void* data[kMaxRecvs] = {};
  size_t sizes[kMaxRecvs] = {};
  int tags[kMaxRecvs] = {};
};
Send::~Send() {
  for (Request* r : pending) delete r;
}
Recv::~Recv() {
  for (Request* r : pending) delete r;
}

struct Handle {
  uint32_t magic;
  int listenId;
  int connectCalls;  // the host passes the same handle memory on every retry
};

std::mutex gMutex;
std::map<int, Listen*> gListens;
int gNextListen = 1;
int gCalls = 0;  // isend/irecv calls, for the null-request pattern
std::vector<std::pair<void*, size_t>> gStranded;  // receive buffers a failed closeRecv left behind

int ndevs() {
  const char* v = std::getenv("ATOLL_TESTNET_NDEVS");
  return v != nullptr ? std::atoi(v) : 2;
}

// ATOLL_TESTNET_PCI: comma-separated sysfs paths, device i taking entry i (the last repeats), so a
// test can hang the devices below NICs of an NCCL_TOPO_FILE.
char* pciPath(int dev) {
  static std::vector<std::string> paths = [] {
    std::vector<std::string> out;
    const char* v = std::getenv("ATOLL_TESTNET_PCI");
    std::string list = v != nullptr ? v : "/sys/devices/pci0000:00/0000:00:05.0";
    for (size_t pos = 0; pos <= list.size();) {
      size_t comma = list.find(',', pos);
      if (comma == std::string::npos) comma = list.size();
      out.push_back(list.substr(pos, comma - pos));
      pos = comma + 1;
    }
    return out;
  }();
  return paths[std::min(static_cast<size_t>(dev), paths.size() - 1)].data();
}

bool tryAgain() { return (gCalls++ % 2) == 0; }

ncclResult_t devices(int* n) {
  *n = ndevs();
  return ncclSuccess;
}

template <class P>
ncclResult_t properties(int dev, P* p) {
  if (dev < 0 || dev >= ndevs()) return ncclInvalidArgument;
  static char name[2][16] = {"testnic0", "testnic1"};
  std::memset(p, 0, sizeof(*p));
  p->name = name[dev % 2];
  p->pciPath = pciPath(dev);
  p->guid = 0x1000 + static_cast<uint64_t>(dev);
  p->ptrSupport = abi::kPtrHost;
  p->speed = 100000 * (dev + 1);
  p->port = 1;
  p->latency = 1.5f;
  p->maxComms = 1024;
  p->maxRecvs = kMaxRecvs;
  if constexpr (requires { p->maxP2pBytes; }) {
    p->maxP2pBytes = size_t{1} << 31;
    p->maxCollBytes = size_t{1} << 31;
  }
  return ncclSuccess;
}

ncclResult_t listenImpl(int dev, void* handle, void** listenComm) {
  if (dev < 0 || dev >= ndevs()) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lock(gMutex);
  for (auto [data, size] : gStranded) std::memset(data, 's', size);  // the late fragments land
  gStranded.clear();
  auto* l = new Listen{gNextListen++, {}, 0};
  gListens[l->id] = l;
  Handle h{kMagic, l->id, 0};
  std::memcpy(handle, &h, sizeof(h));
  *listenComm = l;
  return ncclSuccess;
}

ncclResult_t connectImpl(void* handle, void** sendComm) {
  *sendComm = nullptr;
  Handle h;
  std::memcpy(&h, handle, sizeof(h));
  if (h.magic != kMagic) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lock(gMutex);
  auto it = gListens.find(h.listenId);
  if (it == gListens.end()) return ncclRemoteError;
  if (++h.connectCalls < 3) {  // not connected yet: call again
    std::memcpy(handle, &h, sizeof(h));
    return ncclSuccess;
  }
  auto q = std::make_shared<Queue>();
  it->second->pending.push_back(q);
  *sendComm = new Send{q, {}};
  return ncclSuccess;
}

ncclResult_t acceptImpl(void* listenComm, void** recvComm) {
  *recvComm = nullptr;
  std::lock_guard<std::mutex> lock(gMutex);
  auto* l = static_cast<Listen*>(listenComm);
  if (++l->acceptCalls < 3 || l->pending.empty()) return ncclSuccess;
  *recvComm = new Recv{l->pending.front(), {}};
  l->pending.pop_front();
  return ncclSuccess;
}

ncclResult_t regMrImpl(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (comm == nullptr || (data == nullptr && size > 0) || type != abi::kPtrHost) return ncclInvalidArgument;
  *mhandle = new int(1);
  return ncclSuccess;
}
ncclResult_t regMrDmaBuf(void*, void*, size_t, int, uint64_t, int, void**) { return ncclInvalidUsage; }
ncclResult_t deregMr(void*, void* mhandle) {
  delete static_cast<int*>(mhandle);
  return ncclSuccess;
}

ncclResult_t isendImpl(void* sendComm, void* data, size_t size, int tag, void** request) {
  *request = nullptr;
  std::lock_guard<std::mutex> lock(gMutex);
  if (tryAgain()) return ncclSuccess;
  auto* s = static_cast<Send*>(sendComm);
  const char* p = static_cast<const char*>(data);
  s->queue->messages.push_back({tag, std::vector<char>(p, p + size)});
  auto* r = new Request;
  r->isSend = true;
  r->send = s;
  s->pending.insert(r);
  *request = r;
  return ncclSuccess;
}

ncclResult_t irecvImpl(void* recvComm, int n, void** data, const size_t* sizes, int* tags, void** request) {
  *request = nullptr;
  if (n < 1 || n > kMaxRecvs) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lock(gMutex);
  if (tryAgain()) return ncclSuccess;
  auto* r = new Request;
  r->recv = static_cast<Recv*>(recvComm);
  r->recv->pending.insert(r);
  r->n = n;
  for (int i = 0; i < n; ++i) {
    r->data[i] = data[i];
    r->sizes[i] = sizes[i];
    r->tags[i] = tags[i];
  }
  *request = r;
  return ncclSuccess;
}

ncclResult_t iflush(void*, int, void**, int*, void**, void** request) {
  *request = nullptr;
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* sizes) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto* r = static_cast<Request*>(request);
  if (r->isSend) {  // sizes deliberately left unset
    *done = 1;
    r->send->pending.erase(r);
    delete r;
    return ncclSuccess;
  }
  // Done when a message with each buffer's tag has arrived; each takes the first such message.
  std::deque<Message>& q = r->recv->queue->messages;
  std::vector<std::deque<Message>::iterator> found;
  for (int i = 0; i < r->n; ++i) {
    auto it = q.begin();
    while (it != q.end() && (it->tag != r->tags[i] || std::find(found.begin(), found.end(), it) != found.end())) ++it;
    if (it == q.end()) {
      *done = 0;
      return ncclSuccess;
    }
    if (it->bytes.size() > r->sizes[i]) return ncclInvalidUsage;  // truncation
    found.push_back(it);
  }
  for (int i = 0; i < r->n; ++i) {
    std::memcpy(r->data[i], found[i]->bytes.data(), found[i]->bytes.size());
    if (sizes != nullptr) sizes[i] = static_cast<int>(found[i]->bytes.size());
  }
  std::vector<Message> keep;
  for (auto it = q.begin(); it != q.end(); ++it)
    if (std::find(found.begin(), found.end(), it) == found.end()) keep.push_back(std::move(*it));
  q.assign(std::make_move_iterator(keep.begin()), std::make_move_iterator(keep.end()));
  *done = 1;
  r->recv->pending.erase(r);
  delete r;
  return ncclSuccess;
}

ncclResult_t closeSend(void* c) {
  std::lock_guard<std::mutex> lock(gMutex);
  delete static_cast<Send*>(c);
  return ncclSuccess;
}
bool strandsRecvs() {
  const char* v = std::getenv("ATOLL_TESTNET_STRAND_RECVS");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

ncclResult_t closeRecv(void* c) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto* recv = static_cast<Recv*>(c);
  const bool strand = strandsRecvs() && !recv->pending.empty();
  if (strand)
    for (Request* r : recv->pending)
      for (int i = 0; i < r->n; ++i) gStranded.emplace_back(r->data[i], r->sizes[i]);
  delete recv;
  return strand ? ncclRemoteError : ncclSuccess;
}
ncclResult_t closeListen(void* c) {
  std::lock_guard<std::mutex> lock(gMutex);
  auto* l = static_cast<Listen*>(c);
  gListens.erase(l->id);
  delete l;
  return ncclSuccess;
}
ncclResult_t getDeviceMr(void*, void*, void**) { return ncclInternalError; }
ncclResult_t irecvConsumed(void*, int, void*) { return ncclSuccess; }

#if ATOLL_TEST_NET_VERSION >= 10
// The v10+ signatures (profiler handles, ignored here).
ncclResult_t isendWithProfiler(void* s, void* d, size_t size, int tag, void*, void*, void** req) {
  return isendImpl(s, d, size, tag, req);
}
ncclResult_t irecvWithProfiler(void* r, int n, void** d, size_t* sizes, int* tags, void**, void**, void** req) {
  return irecvImpl(r, n, d, sizes, tags, req);
}
ncclResult_t makeVDevice(int*, abi::VDeviceProps<4>*) { return ncclInvalidUsage; }
#endif

bool initFails() {
  const char* v = std::getenv("ATOLL_TESTNET_FAIL_INIT");
  return v != nullptr && std::strcmp(v, "1") == 0;
}

}  // namespace

#define EXPORT extern "C" __attribute__((visibility("default")))

#if ATOLL_TEST_NET_VERSION == 8
EXPORT abi::Net8 ncclNetPlugin_v8;
abi::Net8 ncclNetPlugin_v8 = {
    "AtollTest-uninitialised",
    [](abi::Logger) {
      if (initFails()) return ncclSystemError;
      ncclNetPlugin_v8.name = "AtollTest";
      return ncclSuccess;
    },
    devices,
    properties<abi::Props8>,
    listenImpl,
    [](int, void* h, void** s, abi::DeviceHandle**) { return connectImpl(h, s); },
    [](void* l, void** r, abi::DeviceHandle**) { return acceptImpl(l, r); },
    regMrImpl,
    regMrDmaBuf,
    deregMr,
    [](void* s, void* d, int size, int tag, void*, void** req) { return isendImpl(s, d, static_cast<size_t>(size), tag, req); },
    [](void* r, int n, void** d, int* sizes, int* tags, void**, void** req) {
      size_t big[kMaxRecvs] = {};
      for (int i = 0; i < n && i < kMaxRecvs; ++i) big[i] = static_cast<size_t>(sizes[i]);
      return irecvImpl(r, n, d, big, tags, req);
    },
    iflush,
    test,
    closeSend,
    closeRecv,
    closeListen,
    getDeviceMr,
    irecvConsumed,
};
#elif ATOLL_TEST_NET_VERSION == 10
EXPORT abi::Net10 ncclNetPlugin_v10;
abi::Net10 ncclNetPlugin_v10 = {
    "AtollTest-uninitialised",
    [](abi::Logger, abi::ProfilerCallback) {
      if (initFails()) return ncclSystemError;
      ncclNetPlugin_v10.name = "AtollTest";
      return ncclSuccess;
    },
    devices,
    properties<abi::Props9>,
    listenImpl,
    [](int, abi::CommConfig* config, void* h, void** s, abi::DeviceHandle**) {
      if (config == nullptr) return ncclInvalidArgument;
      return connectImpl(h, s);
    },
    [](void* l, void** r, abi::DeviceHandle**) { return acceptImpl(l, r); },
    regMrImpl,
    regMrDmaBuf,
    deregMr,
    isendWithProfiler,
    irecvWithProfiler,
    iflush,
    test,
    closeSend,
    closeRecv,
    closeListen,
    getDeviceMr,
    irecvConsumed,
    makeVDevice,
};
#elif ATOLL_TEST_NET_VERSION == 11
namespace {
int gContexts = 0;  // live init contexts; finalize must balance init
}
EXPORT abi::Net11 ncclNetPlugin_v11;
abi::Net11 ncclNetPlugin_v11 = {
    "AtollTest-uninitialised",
    [](void** ctx, uint64_t, abi::CommConfig*, abi::Logger, abi::ProfilerCallback) {
      if (initFails()) return ncclSystemError;
      ncclNetPlugin_v11.name = "AtollTest";
      *ctx = &gContexts;
      ++gContexts;
      return ncclSuccess;
    },
    devices,
    properties<abi::Props11>,
    [](void* ctx, int dev, void* h, void** l) {
      if (ctx != &gContexts) return ncclInvalidArgument;
      return listenImpl(dev, h, l);
    },
    [](void* ctx, int, void* h, void** s, abi::DeviceHandle**) {
      if (ctx != &gContexts) return ncclInvalidArgument;
      return connectImpl(h, s);
    },
    [](void* l, void** r, abi::DeviceHandle**) { return acceptImpl(l, r); },
    regMrImpl,
    regMrDmaBuf,
    deregMr,
    isendWithProfiler,
    irecvWithProfiler,
    iflush,
    test,
    closeSend,
    closeRecv,
    closeListen,
    getDeviceMr,
    irecvConsumed,
    makeVDevice,
    [](void* ctx) {
      if (ctx != &gContexts) return ncclInvalidArgument;
      --gContexts;
      return ncclSuccess;
    },
    [](void*, abi::NetAttr*) { return ncclSuccess; },
};
/// For the host's test: contexts init created and finalize has not released.
EXPORT int atollTestNetLiveContexts() { return gContexts; }
#else
#error "ATOLL_TEST_NET_VERSION must be 8, 10 or 11"
#endif
