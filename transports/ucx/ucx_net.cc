#include "transports/ucx/ucx_net.h"

#include <sys/socket.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/debug.h"
#include "base/hmac.h"
#include "base/params.h"
#include "base/socket.h"
#include "transports/net/host_net_common.h"

namespace atl::net {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kHandleMagic = 0x55435821;  // "UCX!"
constexpr int kMaxRequests = 32;               // per comm, as NCCL_NET_MAX_REQUESTS
constexpr size_t kMaxAddress = 64 << 10;       // a worker address larger than this is not one
// A closed liveness watch fails the receives still waiting only after this: data the peer sent
// before it closed may still be in UCX's transports.
constexpr auto kGrace = std::chrono::milliseconds(200);
constexpr auto kCloseTimeout = std::chrono::seconds(5);

std::mutex gLock;  // every call into the worker (SERIALIZED thread mode)

/// An endpoint close still flushing. A flush needs the peer's worker to answer, and the peer may be
/// idle (waiting in the bootstrap, progressing nothing) or gone: waiting for it inside closeSend
/// once held gLock for good and stalled every other comm of the process. So it goes on in the
/// background, progressed with everything else, until it completes or its deadline passes.
struct Closing {
  void* request;
  Clock::time_point until;
};

struct Ucx {
  ucp_context_h context = nullptr;
  ucp_worker_h worker = nullptr;
  std::vector<uint8_t> address;
  SockAddr listenAddr;  // the interface NCCL_SOCKET_IFNAME picks, for the handshake listener
  std::string ifname;
  std::vector<Closing> closing;  // each holds the worker (one count of gUsers)
};
Ucx* gUcx = nullptr;  // while gUsers > 0
int gUsers = 0;       // listeners, dials and comms (acquire / release)
bool gUsable = false; // init found UCX working

using hostnet::random64;

/// What listen() hands out; connect() is called with the same memory until the link is made.
struct Handle {
  uint32_t magic;
  uint32_t zero;
  PackedAddr addr;
  uint64_t nonce;
  uint64_t dial;  // the dial in progress (a Dial*), 0 before the first call
};
static_assert(sizeof(Handle) <= abi::kHandleMaxSize);

/// The dialler's first words: the listener's nonce and the connection's tag.
struct Hello {
  uint64_t nonce;
  uint64_t tag;
};
/// The acceptor's answer: its worker address's length, then the address.
struct Reply {
  uint64_t addrLen;
};

struct Comm;
struct Request {
  Comm* comm = nullptr;
  bool used = false;
  bool send = false;
  bool done = false;
  ucs_status_t status = UCS_OK;
  size_t length = 0;
  void* ucx = nullptr;  // UCX's request, freed once done
};

struct Comm {
  hostnet::Watch watch;  // the handshake connection, kept open: it closes when the peer does
  ucp_ep_h ep = nullptr;  // send comms only
  uint64_t tag = 0;
  std::atomic<int> epError{UCS_OK};
  Request requests[kMaxRequests];

  Request* take(bool send) {
    for (Request& r : requests)
      if (!r.used) {
        r = Request{};
        r.comm = this, r.used = true, r.send = send;
        return &r;
      }
    return nullptr;  // all in flight: the caller tries again
  }
};

struct Dial {
  Fd fd;
  bool connected = false;
  std::vector<uint8_t> out;  // the Hello
  size_t sent = 0;
  std::vector<uint8_t> in;   // the Reply, then the address
  size_t got = 0;
  uint64_t tag = 0;
};

struct PendingAccept {
  Fd fd;
  Hello hello{};
  size_t got = 0;
  std::vector<uint8_t> out;  // the Reply and our address, once the hello checked out
  size_t sent = 0;
};
struct ListenComm {
  Fd fd;
  uint64_t nonce = 0;
  std::deque<PendingAccept> pending;
};

/// One non-blocking transfer of the handshake: bytes moved, 0 when it would block (or the dial is
/// still under way), -1 when the peer is gone.
ssize_t io(int fd, bool out, void* p, size_t n) {
  int err = 0;
  const ssize_t r = hostnet::io(fd, out, p, n, &err);
  return r < 0 && err == ENOTCONN ? 0 : r;
}

bool inProgress(void* req) { return ucp_request_check_status(req) == UCS_INPROGRESS; }

/// Ends the closes that completed or ran out of time, dropping their holds. Callers hold the worker
/// through a listener, dial or comm of their own, so this never drops the last hold.
void sweepClosing() {
  auto& v = gUcx->closing;
  const auto now = Clock::now();
  for (size_t i = 0; i < v.size();) {
    if (inProgress(v[i].request) && now < v[i].until) {
      ++i;
      continue;
    }
    ucp_request_free(v[i].request);  // one still under way goes on inside UCX, without us
    v[i] = v.back();
    v.pop_back();
    --gUsers;
  }
}

void progressAll() {
  for (int i = 0; i < 64 && ucp_worker_progress(gUcx->worker) != 0; ++i) {
  }
  sweepClosing();
}

/// Progresses the worker until none of `reqs` is in progress or `until` passes; true when all
/// completed. The lock is dropped between rounds so that the process's other comms go on.
bool waitRequests(std::unique_lock<std::mutex>& lock, const std::vector<void*>& reqs, Clock::time_point until) {
  auto pending = [&] { return std::any_of(reqs.begin(), reqs.end(), inProgress); };
  while (pending()) {
    if (Clock::now() >= until) return false;
    progressAll();
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
  return true;
}

void sendDone(void*, ucs_status_t status, void* user);
void recvDone(void*, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user);

/// Parameters of a send or receive whose completion lands in `r` (always through the callback).
ucp_request_param_t requestParams(Request* r) {
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
  if (r->send) p.cb.send = sendDone;
  else p.cb.recv = recvDone;
  p.user_data = r;
  return p;
}

void sendDone(void*, ucs_status_t status, void* user) {
  auto* r = static_cast<Request*>(user);
  r->status = status;
  r->done = true;
}
void recvDone(void*, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user) {
  auto* r = static_cast<Request*>(user);
  r->status = status;
  if (status == UCS_OK && info != nullptr) r->length = info->length;
  r->done = true;
}
void epFailed(void* arg, ucp_ep_h, ucs_status_t status) { static_cast<Comm*>(arg)->epError.store(status); }

ncclResult_t peerGone(const char* what, const char* why) {
  ATOLL_INFO(log::kNet, "net UCX: %s: %s", what, why);
  restoreLastError(std::string("net UCX: ") + what + ": " + why);
  return ncclRemoteError;
}

// --- the ncclNet_v11 entry points ---

/// Creates the process's context and worker (gLock held).
ncclResult_t openUcx() {
  auto u = std::make_unique<Ucx>();
  auto where = findInterfaceAddress(params::getString(params::Id::SocketIfname), &u->ifname);
  if (!where.ok()) return ncclSystemError;
  u->listenAddr = *where;
  ucp_config_t* config = nullptr;
  if (ucp_config_read(nullptr, nullptr, &config) != UCS_OK) return ncclSystemError;
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG;
  const ucs_status_t s = ucp_init(&params, config, &u->context);
  ucp_config_release(config);
  if (s != UCS_OK) {
    ATOLL_INFO(log::kNet, "net UCX: ucp_init failed: %s", ucs_status_string(s));
    return ncclSystemError;
  }
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  if (ucp_worker_create(u->context, &wp, &u->worker) != UCS_OK) {
    ucp_cleanup(u->context);
    return ncclSystemError;
  }
  ucp_address_t* addr = nullptr;
  size_t len = 0;
  if (ucp_worker_get_address(u->worker, &addr, &len) != UCS_OK) {
    ucp_worker_destroy(u->worker);
    ucp_cleanup(u->context);
    return ncclSystemError;
  }
  u->address.assign(reinterpret_cast<uint8_t*>(addr), reinterpret_cast<uint8_t*>(addr) + len);
  ucp_worker_release_address(u->worker, addr);
  gUcx = u.release();
  return ncclSuccess;
}

/// Listeners and comms hold the worker (gLock held): it exists while one does, so a process that
/// destroyed its communicators holds none of UCX's descriptors and threads.
ncclResult_t acquire() {
  if (gUsers == 0 && gUcx == nullptr) {
    const ncclResult_t r = openUcx();
    if (r != ncclSuccess) return r;
  }
  ++gUsers;
  return ncclSuccess;
}
/// Destroys the worker once only flushing closes hold it, after giving them until their deadlines:
/// the peers are usually closing too, progressing their workers, and answer within milliseconds.
void destroyIfIdle() {
  auto& v = gUcx->closing;
  if (gUsers > static_cast<int>(v.size())) return;
  for (const Closing& c : v)
    while (inProgress(c.request) && Clock::now() < c.until) ucp_worker_progress(gUcx->worker);
  for (const Closing& c : v) ucp_request_free(c.request);
  v.clear();
  gUsers = 0;
  ucp_worker_destroy(gUcx->worker);
  ucp_cleanup(gUcx->context);
  delete gUcx;
  gUcx = nullptr;
}
void release() {
  --gUsers;
  destroyIfIdle();
}

ncclResult_t init(void** ctx, uint64_t, abi::CommConfig*, abi::Logger, abi::ProfilerCallback) {
  static int token;
  *ctx = &token;
  std::lock_guard<std::mutex> lock(gLock);
  if (gUsers > 0) return ncclSuccess;
  // Proves UCX works here (a device to report) without keeping its resources.
  const ncclResult_t r = openUcx();
  if (r != ncclSuccess) return r;
  ++gUsers;
  release();
  gUsable = true;
  return ncclSuccess;
}

ncclResult_t devices(int* ndev) {
  *ndev = gUsable ? 1 : 0;
  return ncclSuccess;
}

ncclResult_t getProperties(int dev, abi::Props11* p) {
  if (dev != 0 || !gUsable) return ncclInvalidArgument;
  std::memset(p, 0, sizeof(*p));
  static char name[] = "ucx";
  p->name = name;
  p->pciPath = nullptr;
  p->ptrSupport = abi::kPtrHost;
  p->regIsGlobal = 1;
  p->speed = 0;  // UCX does not say; the cost model keeps its own figure
  p->latency = 0;
  p->maxComms = 65536;
  p->maxRecvs = 1;
  p->netDeviceType = 0;
  p->maxP2pBytes = size_t{1} << 30;
  p->maxCollBytes = size_t{1} << 30;
  p->maxMultiRequestSize = 1;
  return ncclSuccess;
}

ncclResult_t listen(void*, int dev, void* opaqueHandle, void** listenComm) {
  if (dev != 0 || !gUsable) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lock(gLock);
  if (const ncclResult_t r = acquire(); r != ncclSuccess) return r;
  SockAddr bound;
  auto fd = hostnet::listenNonBlocking(gUcx->listenAddr, &bound);
  if (!fd.ok()) {
    release();
    return fd.status().code();
  }
  auto* l = new ListenComm;
  l->fd = std::move(*fd);
  l->nonce = random64();
  Handle h{};
  h.magic = kHandleMagic;
  h.addr = pack(bound);
  h.nonce = l->nonce;
  std::memset(opaqueHandle, 0, abi::kHandleMaxSize);
  std::memcpy(opaqueHandle, &h, sizeof(h));
  *listenComm = l;
  return ncclSuccess;
}

ncclResult_t connect(void*, int dev, void* opaqueHandle, void** sendComm, abi::DeviceHandle**) {
  *sendComm = nullptr;
  if (dev != 0 || !gUsable) return ncclInvalidArgument;
  Handle h;
  std::memcpy(&h, opaqueHandle, sizeof(h));
  if (h.magic != kHandleMagic) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lock(gLock);
  auto* d = reinterpret_cast<Dial*>(h.dial);
  auto restart = [&](const char* why) {
    delete d;
    release();  // the dial's hold
    h.dial = 0;
    std::memcpy(opaqueHandle, &h, sizeof(h));
    return ATOLL_ERROR(ncclRemoteError, "net UCX: connect to %s: %s", unpack(h.addr).toString().c_str(), why).code();
  };
  if (d == nullptr) {
    auto fd = hostnet::startDial(unpack(h.addr));
    if (!fd.ok()) return fd.status().code();
    if (const ncclResult_t r = acquire(); r != ncclSuccess) return r;
    d = new Dial;
    d->fd = std::move(*fd);
    h.dial = reinterpret_cast<uint64_t>(d);
    std::memcpy(opaqueHandle, &h, sizeof(h));
    d->tag = random64();
    const Hello hello{h.nonce, d->tag};
    d->out.assign(reinterpret_cast<const uint8_t*>(&hello), reinterpret_cast<const uint8_t*>(&hello) + sizeof(hello));
    d->in.resize(sizeof(Reply));
  }
  progressAll();  // a peer's closes and wire-ups may wait on this worker; the proxy is here meanwhile
  if (!d->connected) {
    if (const int err = hostnet::dialError(d->fd.get()); err != 0) return restart(std::strerror(err));
    d->connected = true;
  }
  while (d->sent < d->out.size()) {
    const ssize_t r = io(d->fd.get(), true, d->out.data() + d->sent, d->out.size() - d->sent);
    if (r < 0) return restart("the listener closed the connection");
    if (r == 0) return ncclSuccess;
    d->sent += static_cast<size_t>(r);
  }
  while (d->got < d->in.size()) {
    const ssize_t r = io(d->fd.get(), false, d->in.data() + d->got, d->in.size() - d->got);
    if (r < 0) return restart("the listener closed the connection (a handle of another job?)");
    if (r == 0) return ncclSuccess;
    d->got += static_cast<size_t>(r);
    if (d->got == sizeof(Reply) && d->in.size() == sizeof(Reply)) {
      Reply reply;
      std::memcpy(&reply, d->in.data(), sizeof(reply));
      if (reply.addrLen == 0 || reply.addrLen > kMaxAddress) return restart("a malformed answer");
      d->in.resize(sizeof(Reply) + reply.addrLen);
    }
  }
  auto c = std::make_unique<Comm>();
  c->tag = d->tag;
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.address = reinterpret_cast<const ucp_address_t*>(d->in.data() + sizeof(Reply));
  ep.err_mode = UCP_ERR_HANDLING_MODE_PEER;
  ep.err_handler.cb = epFailed;
  ep.err_handler.arg = c.get();
  if (!params::getBool(params::Id::UcxPeerFailure))
    ep.field_mask &= ~static_cast<uint64_t>(UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER);
  const ucs_status_t s = ucp_ep_create(gUcx->worker, &ep, &c->ep);
  if (s != UCS_OK) {
    const char* tls = std::getenv("UCX_TLS");
    const std::string why = std::string(ucs_status_string(s)) + " (UCX_TLS=" + (tls != nullptr ? tls : "unset") +
                            "; peer-failure mode needs a transport that supports it, such as tcp, or "
                            "ATOLL_UCX_PEER_FAILURE=0)";
    return restart(why.c_str());
  }
  c->watch.fd = std::move(d->fd);
  delete d;  // its hold on the worker passes to the comm
  h.dial = 0;
  std::memcpy(opaqueHandle, &h, sizeof(h));
  *sendComm = c.release();
  return ncclSuccess;
}

ncclResult_t accept(void* listenComm, void** recvComm, abi::DeviceHandle**) {
  *recvComm = nullptr;
  auto* l = static_cast<ListenComm*>(listenComm);
  std::lock_guard<std::mutex> lock(gLock);
  progressAll();  // as in connect
  hostnet::acceptAll(l->fd.get(), &l->pending);
  for (auto it = l->pending.begin(); it != l->pending.end();) {
    PendingAccept& p = *it;
    bool drop = false;
    while (!drop && p.got < sizeof(Hello)) {
      const ssize_t r = io(p.fd.get(), false, reinterpret_cast<char*>(&p.hello) + p.got, sizeof(Hello) - p.got);
      if (r <= 0) {
        drop = r < 0;
        break;
      }
      p.got += static_cast<size_t>(r);
      if (p.got == sizeof(Hello)) {
        if (p.hello.nonce != l->nonce) drop = true;  // not a holder of our handle
        const Reply reply{gUcx->address.size()};
        p.out.assign(reinterpret_cast<const uint8_t*>(&reply), reinterpret_cast<const uint8_t*>(&reply) + sizeof(reply));
        p.out.insert(p.out.end(), gUcx->address.begin(), gUcx->address.end());
      }
    }
    while (!drop && p.got == sizeof(Hello) && p.sent < p.out.size()) {
      const ssize_t r = io(p.fd.get(), true, p.out.data() + p.sent, p.out.size() - p.sent);
      if (r < 0) drop = true;
      if (r <= 0) break;
      p.sent += static_cast<size_t>(r);
    }
    if (drop) {
      it = l->pending.erase(it);
      continue;
    }
    if (p.got == sizeof(Hello) && p.sent == p.out.size()) {
      if (const ncclResult_t r = acquire(); r != ncclSuccess) return r;
      auto* c = new Comm;
      c->tag = p.hello.tag;
      c->watch.fd = std::move(p.fd);
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
  auto* c = static_cast<Comm*>(sendComm);
  std::lock_guard<std::mutex> lock(gLock);
  if (c->epError.load() != UCS_OK) return peerGone("send", ucs_status_string(static_cast<ucs_status_t>(c->epError.load())));
  Request* r = c->take(true);
  if (r == nullptr) return ncclSuccess;
  const ucp_request_param_t p = requestParams(r);
  r->length = size;
  void* s = ucp_tag_send_nbx(c->ep, data, size, c->tag ^ static_cast<uint32_t>(tag), &p);
  if (UCS_PTR_IS_ERR(s)) {
    r->used = false;
    return peerGone("send", ucs_status_string(UCS_PTR_STATUS(s)));
  }
  r->ucx = s;
  *request = r;
  return ncclSuccess;
}

ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void**, void**, void** request) {
  *request = nullptr;
  if (n != 1) return ncclInvalidArgument;  // maxRecvs is 1
  auto* c = static_cast<Comm*>(recvComm);
  std::lock_guard<std::mutex> lock(gLock);
  Request* r = c->take(false);
  if (r == nullptr) return ncclSuccess;
  const ucp_request_param_t p = requestParams(r);
  void* s = ucp_tag_recv_nbx(gUcx->worker, data[0], sizes[0], c->tag ^ static_cast<uint32_t>(tags[0]), ~uint64_t{0}, &p);
  if (UCS_PTR_IS_ERR(s)) {
    r->used = false;
    return ATOLL_ERROR(ncclSystemError, "net UCX: receive: %s", ucs_status_string(UCS_PTR_STATUS(s))).code();
  }
  r->ucx = s;
  *request = r;
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  Comm* c = r->comm;
  std::lock_guard<std::mutex> lock(gLock);
  *done = 0;
  progressAll();
  if (r->done) {
    const ucs_status_t st = r->status;
    ucp_request_free(r->ucx);
    r->ucx = nullptr;
    r->used = false;
    if (st == UCS_ERR_MESSAGE_TRUNCATED)
      return ATOLL_ERROR(ncclInvalidUsage, "net UCX: a message larger than its receive arrived").code();
    if (st != UCS_OK) return peerGone(r->send ? "send" : "receive", ucs_status_string(st));
    *done = 1;
    if (sizes != nullptr) sizes[0] = static_cast<int>(r->length);
    return ncclSuccess;
  }
  if (c->epError.load() != UCS_OK) return peerGone("send", ucs_status_string(static_cast<ucs_status_t>(c->epError.load())));
  if (c->watch.goneFor(kGrace)) return peerGone(r->send ? "send" : "receive", "the peer closed the connection");
  return ncclSuccess;
}

/// Returns at once unless a receive is in the middle of a rendezvous, or sends are still in flight
/// with peer-failure mode off; the endpoint's flush goes on in the background (see Closing). Fails
/// when a transfer still touches its buffer at the deadline: the caller must then keep the buffer.
ncclResult_t closeComm(Comm* c) {
  const auto until = Clock::now() + kCloseTimeout;
  std::unique_lock<std::mutex> lock(gLock);
  std::vector<void*> sends, recvs;
  for (Request& r : c->requests) {
    if (!r.used || r.ucx == nullptr) continue;
    // Receives nobody waits for any more are cancelled, so UCX never writes into freed buffers.
    if (!r.send && !r.done) ucp_request_cancel(gUcx->worker, r.ucx);
    if (inProgress(r.ucx)) (r.send ? sends : recvs).push_back(r.ucx);
  }
  // A receive UCX has matched ignores the cancel: its rendezvous goes on, and the fragments still
  // coming land in the buffer whenever anyone progresses the worker, after the caller freed it. So
  // the close waits until the sender finishes or its endpoint fails.
  const bool recvsLeft = !waitRequests(lock, recvs, until);
  bool sendsLeft = false;
  void* closing = nullptr;
  if (c->ep != nullptr) {
    // Sends in flight at close were abandoned by the engine (an abort): a forced close cancels them
    // before their buffers are freed. Forcing needs peer-failure mode on both sides; without it they
    // get until the deadline.
    const bool peerFailure = params::getBool(params::Id::UcxPeerFailure);
    const bool force = peerFailure && (c->epError.load() != UCS_OK || !sends.empty());
    if (!peerFailure) sendsLeft = !waitRequests(lock, sends, until);
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0;  // else flush: deliver what was sent
    closing = ucp_ep_close_nbx(c->ep, &p);
    if (UCS_PTR_IS_ERR(closing)) closing = nullptr;
  }
  // Freeing a request UCX has not finished is allowed: it completes inside UCX, and our callback
  // (which would write into this comm) is not called.
  for (Request& r : c->requests)
    if (r.used && r.ucx != nullptr) ucp_request_free(r.ucx);
  delete c;
  if (closing != nullptr) {
    gUcx->closing.push_back({closing, until});  // the comm's hold passes to its close
    destroyIfIdle();
  } else {
    release();
  }
  if (!recvsLeft && !sendsLeft) return ncclSuccess;
  return ATOLL_ERROR(ncclRemoteError, "net UCX: closed with a transfer still in flight after %lld s; its buffer may still be %s",
                     static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(kCloseTimeout).count()),
                     recvsLeft ? "written" : "read")
      .code();
}

ncclResult_t closeSend(void* sendComm) { return closeComm(static_cast<Comm*>(sendComm)); }
ncclResult_t closeRecv(void* recvComm) { return closeComm(static_cast<Comm*>(recvComm)); }
ncclResult_t closeListen(void* listenComm) {
  std::lock_guard<std::mutex> lock(gLock);
  delete static_cast<ListenComm*>(listenComm);
  release();
  return ncclSuccess;
}
ncclResult_t finalize(void*) { return ncclSuccess; }  // the worker is the process's (see gUcx)

}  // namespace

const abi::Net11 kUcxNet = {
    "UCX",             init,     devices,          getProperties,   listen,     connect,
    accept,            hostnet::regMr,   hostnet::regMrDmaBuf, hostnet::deregMr, isend, irecv,
    hostnet::iflush,   test,     closeSend,        closeRecv,       closeListen, hostnet::getDeviceMr,
    hostnet::irecvConsumed, hostnet::makeVDevice, finalize, hostnet::setNetAttr,
};

}  // namespace atl::net
