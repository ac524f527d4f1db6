#include "transports/ib/ib_net.h"

#include <infiniband/verbs.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/debug.h"
#include "base/hmac.h"
#include "base/params.h"
#include "base/socket.h"
#include "transports/ib/ib_flow.h"
#include "transports/ib/ib_hca_list.h"
#include "transports/ib/ib_wire.h"
#include "transports/net/host_net_common.h"

namespace atl::net {
namespace {

using ib::Chunk;
using ib::ConnInfo;
using ib::FifoSlot;
using ib::kFifoDepth;

constexpr uint32_t kHandleMagic = 0x49424e21;  // "IBN!"
constexpr size_t kChunkAlign = 128;
constexpr int kRecvsPerQp = kFifoDepth;     // zero-length receives that take the immediates
constexpr size_t kMaxInfo = 4096;
constexpr auto kGrace = std::chrono::milliseconds(200);
constexpr uint64_t kFifoWrite = uint64_t{1} << 63;  // wr_id flag: a FIFO slot write, not a message

std::mutex gLock;  // every verbs call and all net state

struct Mr {
  uintptr_t start = 0, end = 0;
  ibv_mr* mr = nullptr;
  int refs = 0;
};

struct Port {
  std::string name;  // "mlx5_0:1"
  ibv_context* ctx = nullptr;
  ibv_pd* pd = nullptr;
  int port = 0;
  ibv_port_attr attr{};
  int gidIndex = 0;
  ibv_gid gid{};
  int speedMbps = 0;
  std::string pciPath;
  std::deque<Mr> mrs;  // registration cache (entries never move: handles point at them)
};
std::vector<Port>* gPorts = nullptr;  // found by init, kept for the process
SockAddr gListenAddr;

using hostnet::random64;

int speedMbps(const ibv_port_attr& a) {
  // As NCCL reads ibv_port_attr: lanes from active_width, per-lane Mbps from active_speed.
  int lanes = 1;
  switch (a.active_width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: break;
  }
  int lane = 2500;
  switch (a.active_speed) {
    case 1: lane = 2500; break;
    case 2: lane = 5000; break;
    case 4: case 8: lane = 10000; break;
    case 16: lane = 14000; break;
    case 32: lane = 25000; break;
    case 64: lane = 50000; break;
    case 128: lane = 100000; break;
    default: break;
  }
  return lanes * lane;
}

/// NCCL_IB_GID_INDEX, or (-1) the first RoCE v2 GID of the port, else index 0.
int pickGid(ibv_context* ctx, int port, const ibv_port_attr& attr) {
  const int64_t want = params::getInt(params::Id::IbGidIndex);
  if (want >= 0) return static_cast<int>(want);
  if (attr.link_layer != IBV_LINK_LAYER_ETHERNET) return 0;
  for (int i = 0; i < attr.gid_tbl_len; ++i) {
    ibv_gid_entry e{};
    if (ibv_query_gid_ex(ctx, static_cast<uint32_t>(port), static_cast<uint32_t>(i), &e, 0) != 0) continue;
    if (e.gid_type == IBV_GID_TYPE_ROCE_V2) return i;
  }
  return 0;
}

// --- registration cache ---

Result<Mr*> registerRange(Port& p, void* data, size_t size) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(data) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + std::max<size_t>(size, 1) + page - 1) / page * page;
  for (Mr& m : p.mrs)
    if (m.mr != nullptr && m.start <= start && end <= m.end) {
      ++m.refs;
      return &m;
    }
  ibv_mr* mr = ibv_reg_mr(p.pd, reinterpret_cast<void*>(start), end - start,
                          IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (mr == nullptr) return ATOLL_ERROR(ncclSystemError, "net IB %s: ibv_reg_mr of %zu bytes: %s", p.name.c_str(),
                                        static_cast<size_t>(end - start), std::strerror(errno));
  for (Mr& m : p.mrs)
    if (m.mr == nullptr) {  // a free entry
      m = Mr{start, end, mr, 1};
      return &m;
    }
  p.mrs.push_back(Mr{start, end, mr, 1});
  return &p.mrs.back();
}

void releaseRange(Mr* m) {
  if (m == nullptr || --m->refs > 0) return;
  (void)ibv_dereg_mr(m->mr);
  *m = Mr{};
}

// --- connections ---

struct Handle {
  uint32_t magic;
  int32_t dev;
  PackedAddr addr;
  uint64_t nonce;
  uint64_t dial;  // the dial in progress (a Dial*), 0 before the first call
};
static_assert(sizeof(Handle) <= abi::kHandleMaxSize);

/// A length-prefixed message over a non-blocking socket, moved a little on every call.
struct Exchange {
  std::vector<uint8_t> out;
  size_t sent = 0;
  std::vector<uint8_t> in = std::vector<uint8_t>(sizeof(uint64_t));
  size_t got = 0;

  void put(std::span<const std::byte> body) {
    const uint64_t len = body.size();
    out.resize(sizeof(len) + body.size());
    std::memcpy(out.data(), &len, sizeof(len));
    std::memcpy(out.data() + sizeof(len), body.data(), body.size());
  }
  /// 1 done, 0 not yet, -1 the peer is gone.
  int pushOut(int fd) {
    while (sent < out.size()) {
      int err = 0;
      const ssize_t r = hostnet::io(fd, true, out.data() + sent, out.size() - sent, &err);
      if (r < 0) return err == ENOTCONN ? 0 : -1;
      if (r == 0) return 0;
      sent += static_cast<size_t>(r);
    }
    return 1;
  }
  /// 1 a whole message is in, 0 not yet, -1 the peer is gone or sent nonsense.
  int pullIn(int fd) {
    while (got < in.size()) {
      int err = 0;
      const ssize_t r = hostnet::io(fd, false, in.data() + got, in.size() - got, &err);
      if (r < 0) return err == ENOTCONN ? 0 : -1;
      if (r == 0) return 0;
      got += static_cast<size_t>(r);
      if (got == sizeof(uint64_t) && in.size() == sizeof(uint64_t)) {
        uint64_t len = 0;
        std::memcpy(&len, in.data(), sizeof(len));
        if (len > kMaxInfo) return -1;
        in.resize(sizeof(uint64_t) + len);
      }
    }
    return 1;
  }
  std::span<const std::byte> body() const {
    return std::as_bytes(std::span(in)).subspan(sizeof(uint64_t));
  }
};

struct Comm;
struct Request {
  Comm* comm = nullptr;
  bool used = false, send = false, done = false;
  int pending = 0;  // send: write completions still due
  ib::RecvProgress progress{1};
  uint32_t size = 0;
};

struct Comm {
  Port* port = nullptr;
  hostnet::Watch watch;  // the handshake connection, kept open: it closes when the peer does
  ibv_cq* cq = nullptr;
  std::vector<ibv_qp*> qps;
  std::vector<uint32_t> psns;
  bool failed = false;
  std::string why;
  Request requests[kFifoDepth];

  // Send comms: the FIFO the receiver writes its receives into.
  FifoSlot* fifo = nullptr;
  ibv_mr* fifoMr = nullptr;
  ib::FifoReader reader;
  // Receive comms: the sender's FIFO, the credits, the slots' source memory, receives in order.
  uint64_t peerFifo = 0;
  uint32_t peerFifoKey = 0;
  ib::CreditGrant credits;
  FifoSlot* slots = nullptr;
  ibv_mr* slotsMr = nullptr;
  std::deque<Request*> recvOrder;
  std::vector<uint64_t> arrivedPerQp;  // immediates seen per QP (each QP delivers in receive order)
  uint64_t recvDone = 0;

  Request* take(bool send) {
    for (Request& r : requests)
      if (!r.used) {
        r = Request{};
        r.comm = this, r.used = true, r.send = send;
        return &r;
      }
    return nullptr;
  }
  ncclResult_t fail(const std::string& what) {
    if (!failed) {
      failed = true;
      why = what;
    }
    ATOLL_INFO(log::kNet, "net IB %s: %s", port->name.c_str(), why.c_str());
    restoreLastError("net IB " + port->name + ": " + why);
    return ncclRemoteError;
  }
};

ncclResult_t createQps(Comm* c, int nqps) {
  Port& p = *c->port;
  c->cq = ibv_create_cq(p.ctx, 2 * kFifoDepth * (nqps + 1) + kRecvsPerQp * nqps, nullptr, nullptr, 0);
  if (c->cq == nullptr) return ATOLL_ERROR(ncclSystemError, "net IB %s: ibv_create_cq: %s", p.name.c_str(), std::strerror(errno)).code();
  for (int q = 0; q < nqps; ++q) {
    ibv_qp_init_attr init{};
    init.send_cq = c->cq;
    init.recv_cq = c->cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = 2 * kFifoDepth;
    init.cap.max_recv_wr = kRecvsPerQp;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    init.cap.max_inline_data = sizeof(FifoSlot);
    ibv_qp* qp = ibv_create_qp(p.pd, &init);
    if (qp == nullptr) return ATOLL_ERROR(ncclSystemError, "net IB %s: ibv_create_qp: %s", p.name.c_str(), std::strerror(errno)).code();
    c->qps.push_back(qp);
    c->psns.push_back(static_cast<uint32_t>(random64() & 0xffffff));
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = static_cast<uint8_t>(p.port);
    a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
    if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0)
      return ATOLL_ERROR(ncclSystemError, "net IB %s: queue pair to INIT: %s", p.name.c_str(), std::strerror(errno)).code();
  }
  return ncclSuccess;
}

ConnInfo localInfo(const Comm* c) {
  const Port& p = *c->port;
  ConnInfo info;
  info.lid = p.attr.lid;
  info.port = static_cast<uint8_t>(p.port);
  info.linkLayer = p.attr.link_layer;
  info.mtu = static_cast<uint8_t>(p.attr.active_mtu);
  std::memcpy(info.gid.data(), p.gid.raw, sizeof(p.gid.raw));
  if (c->fifoMr != nullptr) {
    info.fifoAddr = reinterpret_cast<uint64_t>(c->fifo);
    info.fifoRkey = c->fifoMr->rkey;
  }
  for (size_t q = 0; q < c->qps.size(); ++q) info.qps.push_back({c->qps[q]->qp_num, c->psns[q]});
  return info;
}

/// Takes the queue pairs to RTR and RTS towards the peer described by `remote`.
ncclResult_t connectQps(Comm* c, const ConnInfo& remote) {
  Port& p = *c->port;
  if (remote.qps.size() != c->qps.size())
    return ATOLL_ERROR(ncclInvalidUsage, "net IB %s: the peer has %zu queue pairs per connection, this rank %zu "
                       "(set NCCL_IB_QPS_PER_CONNECTION alike)", p.name.c_str(), remote.qps.size(), c->qps.size()).code();
  for (size_t q = 0; q < c->qps.size(); ++q) {
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = static_cast<ibv_mtu>(std::min<int>(p.attr.active_mtu, remote.mtu));
    a.dest_qp_num = remote.qps[q].qpn;
    a.rq_psn = remote.qps[q].psn;
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = static_cast<uint8_t>(p.port);
    a.ah_attr.sl = static_cast<uint8_t>(params::getInt(params::Id::IbSl) & 0xf);
    if (p.attr.link_layer == IBV_LINK_LAYER_ETHERNET) {
      a.ah_attr.is_global = 1;
      std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid.data(), sizeof(a.ah_attr.grh.dgid.raw));
      a.ah_attr.grh.sgid_index = static_cast<uint8_t>(p.gidIndex);
      a.ah_attr.grh.hop_limit = 255;
      a.ah_attr.grh.traffic_class = static_cast<uint8_t>(params::getInt(params::Id::IbTc));
    } else {
      a.ah_attr.is_global = 0;
      a.ah_attr.dlid = remote.lid;
    }
    if (ibv_modify_qp(c->qps[q], &a,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0)
      return ATOLL_ERROR(ncclSystemError, "net IB %s: queue pair to RTR: %s", p.name.c_str(), std::strerror(errno)).code();
    ibv_qp_attr s{};
    s.qp_state = IBV_QPS_RTS;
    s.timeout = static_cast<uint8_t>(std::clamp<int64_t>(params::getInt(params::Id::IbTimeout), 1, 31));
    s.retry_cnt = static_cast<uint8_t>(std::clamp<int64_t>(params::getInt(params::Id::IbRetryCnt), 0, 7));
    s.rnr_retry = 7;
    s.sq_psn = c->psns[q];
    s.max_rd_atomic = 1;
    if (ibv_modify_qp(c->qps[q], &s,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                          IBV_QP_MAX_QP_RD_ATOMIC) != 0)
      return ATOLL_ERROR(ncclSystemError, "net IB %s: queue pair to RTS: %s", p.name.c_str(), std::strerror(errno)).code();
  }
  return ncclSuccess;
}

/// A zero-length receive on `qp`, for the immediate of one write.
bool postImmRecv(ibv_qp* qp) {
  ibv_recv_wr wr{};
  ibv_recv_wr* bad = nullptr;
  wr.wr_id = 0;
  wr.num_sge = 0;
  return ibv_post_recv(qp, &wr, &bad) == 0;
}

void destroyComm(Comm* c) {
  for (ibv_qp* qp : c->qps) (void)ibv_destroy_qp(qp);
  if (c->cq != nullptr) (void)ibv_destroy_cq(c->cq);
  if (c->fifoMr != nullptr) (void)ibv_dereg_mr(c->fifoMr);
  if (c->slotsMr != nullptr) (void)ibv_dereg_mr(c->slotsMr);
  std::free(c->fifo);
  std::free(c->slots);
  delete c;
}

struct Dial {
  Fd fd;
  bool connected = false;
  Comm* comm = nullptr;
  Exchange ex;
};

struct PendingAccept {
  Fd fd;
  Exchange ex;
  Comm* comm = nullptr;  // made once the sender's info came
};
struct ListenComm {
  Fd fd;
  int dev = 0;
  uint64_t nonce = 0;
  std::deque<PendingAccept> pending;
};

/// Polls the completion queue and applies what completed to the requests.
void poll(Comm* c) {
  ibv_wc wc[16];
  for (;;) {
    const int n = ibv_poll_cq(c->cq, 16, wc);
    if (n < 0) {
      (void)c->fail("ibv_poll_cq failed");
      return;
    }
    for (int i = 0; i < n; ++i) {
      if (wc[i].status != IBV_WC_SUCCESS) {
        (void)c->fail(std::string("a work request failed: ") + ibv_wc_status_str(wc[i].status) +
                      " (the peer is gone or unreachable)");
        continue;
      }
      if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        size_t q = 0;
        while (q < c->qps.size() && c->qps[q]->qp_num != wc[i].qp_num) ++q;
        if (q == c->qps.size()) continue;
        const uint64_t k = c->arrivedPerQp[q]++ - c->recvDone;  // this QP's k-th outstanding receive
        if (k < c->recvOrder.size()) {
          Request* r = c->recvOrder[k];
          if (r->progress.arrived(wc[i].imm_data)) r->size = r->progress.size();
        }
        if (!postImmRecv(c->qps[q])) (void)c->fail("ibv_post_recv failed");
        continue;
      }
      if (wc[i].wr_id & kFifoWrite) continue;  // a FIFO slot reached the sender
      auto* r = reinterpret_cast<Request*>(wc[i].wr_id);
      if (r != nullptr && --r->pending == 0) r->done = true;
    }
    if (n < 16) break;
  }
  // Receives complete in order: every QP delivered its write for the oldest ones.
  while (!c->recvOrder.empty()) {
    Request* r = c->recvOrder.front();
    bool all = true;
    for (uint64_t a : c->arrivedPerQp) all = all && a > c->recvDone;
    if (!all) break;
    r->done = true;
    c->recvOrder.pop_front();
    ++c->recvDone;
    c->credits.complete();
  }
}

// --- the ncclNet_v11 entry points ---

ncclResult_t init(void** ctx, uint64_t, abi::CommConfig*, abi::Logger, abi::ProfilerCallback) {
  static int token;
  *ctx = &token;
  std::lock_guard<std::mutex> lock(gLock);
  if (gPorts != nullptr) return ncclSuccess;
  auto ports = std::make_unique<std::vector<Port>>();
  ib::HcaFilter filter;
  std::string why;
  if (!ib::parseHcaList(params::getString(params::Id::IbHca), &filter, &why))
    return ATOLL_ERROR(ncclInvalidArgument, "net IB: %s", why.c_str()).code();
  std::string ifname;
  auto where = findInterfaceAddress(params::getString(params::Id::SocketIfname), &ifname);
  if (!where.ok()) return ncclSystemError;
  gListenAddr = *where;
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  for (int d = 0; list != nullptr && d < n; ++d) {
    ibv_context* ctx = ibv_open_device(list[d]);
    if (ctx == nullptr) continue;
    ibv_device_attr dattr{};
    bool used = false;
    if (ibv_query_device(ctx, &dattr) == 0) {
      for (int port = 1; port <= dattr.phys_port_cnt; ++port) {
        ibv_port_attr pattr{};
        if (ibv_query_port(ctx, static_cast<uint8_t>(port), &pattr) != 0 || pattr.state != IBV_PORT_ACTIVE) continue;
        const std::string name = ibv_get_device_name(list[d]);
        if (!filter.allows(name, port)) continue;
        Port p;
        p.name = name + ":" + std::to_string(port);
        p.ctx = ctx;
        p.pd = ibv_alloc_pd(ctx);
        if (p.pd == nullptr) continue;
        p.port = port;
        p.attr = pattr;
        p.gidIndex = pickGid(ctx, port, pattr);
        (void)ibv_query_gid(ctx, static_cast<uint8_t>(port), p.gidIndex, &p.gid);
        p.speedMbps = speedMbps(pattr);
        p.pciPath = std::string("/sys/class/infiniband/") + name + "/device";
        ports->push_back(std::move(p));
        used = true;
      }
    }
    if (!used) (void)ibv_close_device(ctx);
  }
  if (list != nullptr) ibv_free_device_list(list);
  ATOLL_INFO(log::kNet, "net IB: %zu active port(s)%s", ports->size(),
             n == 0 ? " (no RDMA device on this machine)" : "");
  gPorts = ports.release();
  return ncclSuccess;
}

ncclResult_t devices(int* ndev) {
  *ndev = gPorts != nullptr ? static_cast<int>(gPorts->size()) : 0;
  return ncclSuccess;
}

ncclResult_t getProperties(int dev, abi::Props11* props) {
  if (gPorts == nullptr || dev < 0 || dev >= static_cast<int>(gPorts->size())) return ncclInvalidArgument;
  Port& p = (*gPorts)[static_cast<size_t>(dev)];
  std::memset(props, 0, sizeof(*props));
  props->name = p.name.data();
  props->pciPath = p.pciPath.data();
  props->ptrSupport = abi::kPtrHost | abi::kPtrDmaBuf;
  props->regIsGlobal = 1;
  props->speed = p.speedMbps;
  props->port = p.port;
  props->latency = 0;
  props->maxComms = 65536;
  props->maxRecvs = 1;
  props->netDeviceType = 0;
  props->maxP2pBytes = size_t{1} << 30;  // the immediate carries the size in 32 bits
  props->maxCollBytes = size_t{1} << 30;
  props->maxMultiRequestSize = 1;
  return ncclSuccess;
}

ncclResult_t listen(void*, int dev, void* opaqueHandle, void** listenComm) {
  std::lock_guard<std::mutex> lock(gLock);
  if (gPorts == nullptr || dev < 0 || dev >= static_cast<int>(gPorts->size())) return ncclInvalidArgument;
  SockAddr bound;
  auto fd = hostnet::listenNonBlocking(gListenAddr, &bound);
  if (!fd.ok()) return fd.status().code();
  auto* l = new ListenComm;
  l->fd = std::move(*fd);
  l->dev = dev;
  l->nonce = random64();
  Handle h{};
  h.magic = kHandleMagic;
  h.dev = dev;
  h.addr = pack(bound);
  h.nonce = l->nonce;
  std::memset(opaqueHandle, 0, abi::kHandleMaxSize);
  std::memcpy(opaqueHandle, &h, sizeof(h));
  *listenComm = l;
  return ncclSuccess;
}

ncclResult_t connect(void*, int dev, void* opaqueHandle, void** sendComm, abi::DeviceHandle**) {
  *sendComm = nullptr;
  std::lock_guard<std::mutex> lock(gLock);
  if (gPorts == nullptr || dev < 0 || dev >= static_cast<int>(gPorts->size())) return ncclInvalidArgument;
  Handle h;
  std::memcpy(&h, opaqueHandle, sizeof(h));
  if (h.magic != kHandleMagic) return ncclInvalidArgument;
  auto* d = reinterpret_cast<Dial*>(h.dial);
  auto restart = [&](const std::string& why) {
    if (d != nullptr && d->comm != nullptr) destroyComm(d->comm);
    delete d;
    h.dial = 0;
    std::memcpy(opaqueHandle, &h, sizeof(h));
    return ATOLL_ERROR(ncclRemoteError, "net IB: connect to %s: %s", unpack(h.addr).toString().c_str(), why.c_str()).code();
  };
  if (d == nullptr) {
    auto fd = hostnet::startDial(unpack(h.addr));
    if (!fd.ok()) return fd.status().code();
    d = new Dial;
    d->fd = std::move(*fd);
    h.dial = reinterpret_cast<uint64_t>(d);
    std::memcpy(opaqueHandle, &h, sizeof(h));
    d->comm = new Comm;
    d->comm->port = &(*gPorts)[static_cast<size_t>(dev)];
    const int nqps = static_cast<int>(std::clamp<int64_t>(params::getInt(params::Id::IbQpsPerConnection), 1, ib::kMaxQps));
    if (createQps(d->comm, nqps) != ncclSuccess) return restart(lastErrorMessage());
    d->comm->fifo = static_cast<FifoSlot*>(std::aligned_alloc(4096, 4096));
    std::memset(d->comm->fifo, 0, 4096);
    d->comm->fifoMr = ibv_reg_mr(d->comm->port->pd, d->comm->fifo, 4096,
                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
    if (d->comm->fifoMr == nullptr) return restart(std::string("ibv_reg_mr of the FIFO: ") + std::strerror(errno));
    const std::vector<std::byte> info = encodeConnInfo(localInfo(d->comm));
    std::vector<std::byte> body(sizeof(h.nonce));
    std::memcpy(body.data(), &h.nonce, sizeof(h.nonce));
    body.insert(body.end(), info.begin(), info.end());
    d->ex.put(body);
  }
  if (!d->connected) {
    if (const int err = hostnet::dialError(d->fd.get()); err != 0) return restart(std::strerror(err));
    d->connected = true;
  }
  if (const int s = d->ex.pushOut(d->fd.get()); s <= 0) return s < 0 ? restart("the listener closed the connection") : ncclSuccess;
  if (const int s = d->ex.pullIn(d->fd.get()); s <= 0)
    return s < 0 ? restart("the listener closed the connection (a handle of another job?)") : ncclSuccess;
  ConnInfo remote;
  std::string why;
  if (!ib::decodeConnInfo(d->ex.body(), &remote, &why)) return restart(why);
  if (connectQps(d->comm, remote) != ncclSuccess) return restart(lastErrorMessage());
  Comm* c = d->comm;
  c->watch.fd = std::move(d->fd);
  d->comm = nullptr;
  delete d;
  h.dial = 0;
  std::memcpy(opaqueHandle, &h, sizeof(h));
  *sendComm = c;
  return ncclSuccess;
}

ncclResult_t accept(void* listenComm, void** recvComm, abi::DeviceHandle**) {
  *recvComm = nullptr;
  auto* l = static_cast<ListenComm*>(listenComm);
  std::lock_guard<std::mutex> lock(gLock);
  hostnet::acceptAll(l->fd.get(), &l->pending);
  for (auto it = l->pending.begin(); it != l->pending.end();) {
    PendingAccept& p = *it;
    auto drop = [&](const std::string& why) {
      ATOLL_INFO(log::kNet, "net IB: dropped a connection: %s", why.c_str());
      if (p.comm != nullptr) destroyComm(p.comm);
      it = l->pending.erase(it);
    };
    if (p.comm == nullptr) {
      const int s = p.ex.pullIn(p.fd.get());
      if (s < 0) {
        drop("closed before its connection info");
        continue;
      }
      if (s == 0) {
        ++it;
        continue;
      }
      const std::span<const std::byte> body = p.ex.body();
      uint64_t nonce = 0;
      ConnInfo remote;
      std::string why;
      if (body.size() < sizeof(nonce)) {
        drop("a message too short");
        continue;
      }
      std::memcpy(&nonce, body.data(), sizeof(nonce));
      if (nonce != l->nonce) {
        drop("not a holder of this listener's handle");
        continue;
      }
      if (!ib::decodeConnInfo(body.subspan(sizeof(nonce)), &remote, &why)) {
        drop(why);
        continue;
      }
      p.comm = new Comm;
      p.comm->port = &(*gPorts)[static_cast<size_t>(l->dev)];
      p.comm->peerFifo = remote.fifoAddr;
      p.comm->peerFifoKey = remote.fifoRkey;
      if (createQps(p.comm, static_cast<int>(remote.qps.size())) != ncclSuccess || connectQps(p.comm, remote) != ncclSuccess) {
        drop(lastErrorMessage());
        continue;
      }
      p.comm->arrivedPerQp.assign(p.comm->qps.size(), 0);
      bool posted = true;
      for (ibv_qp* qp : p.comm->qps)
        for (int k = 0; k < kRecvsPerQp; ++k) posted = posted && postImmRecv(qp);
      p.comm->slots = static_cast<FifoSlot*>(std::aligned_alloc(4096, 4096));
      std::memset(p.comm->slots, 0, 4096);
      p.comm->slotsMr = ibv_reg_mr(p.comm->port->pd, p.comm->slots, 4096, IBV_ACCESS_LOCAL_WRITE);
      if (!posted || p.comm->slotsMr == nullptr) {
        drop("posting receives or registering the FIFO source failed");
        continue;
      }
      p.ex.put(encodeConnInfo(localInfo(p.comm)));
    }
    const int s = p.ex.pushOut(p.fd.get());
    if (s < 0) {
      drop("closed before the answer");
      continue;
    }
    if (s == 0) {
      ++it;
      continue;
    }
    Comm* c = p.comm;
    c->watch.fd = std::move(p.fd);
    l->pending.erase(it);
    *recvComm = c;
    return ncclSuccess;
  }
  return ncclSuccess;
}

ncclResult_t regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  *mhandle = nullptr;
  if (type != abi::kPtrHost) return ncclInvalidArgument;  // device memory comes through regMrDmaBuf
  std::lock_guard<std::mutex> lock(gLock);
  auto m = registerRange(*static_cast<Comm*>(comm)->port, data, size);
  if (!m.ok()) return m.status().code();
  *mhandle = *m;
  return ncclSuccess;
}

ncclResult_t regMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  *mhandle = nullptr;
  if (type != abi::kPtrHost && type != abi::kPtrCuda && type != abi::kPtrDmaBuf) return ncclInvalidArgument;
  std::lock_guard<std::mutex> lock(gLock);
  Port& p = *static_cast<Comm*>(comm)->port;
  ibv_mr* mr = ibv_reg_dmabuf_mr(p.pd, offset, size, reinterpret_cast<uint64_t>(data), fd,
                                 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
  if (mr == nullptr)
    return ATOLL_ERROR(ncclSystemError, "net IB %s: ibv_reg_dmabuf_mr: %s", p.name.c_str(), std::strerror(errno)).code();
  p.mrs.push_back(Mr{reinterpret_cast<uintptr_t>(data), reinterpret_cast<uintptr_t>(data) + size, mr, 1});
  *mhandle = &p.mrs.back();
  return ncclSuccess;
}

ncclResult_t deregMr(void*, void* mhandle) {
  std::lock_guard<std::mutex> lock(gLock);
  releaseRange(static_cast<Mr*>(mhandle));
  return ncclSuccess;
}

ncclResult_t isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void*, void** request) {
  *request = nullptr;
  auto* c = static_cast<Comm*>(sendComm);
  std::lock_guard<std::mutex> lock(gLock);
  if (c->failed) return ncclRemoteError;
  Request* r = c->take(true);
  if (r == nullptr) return ncclSuccess;
  const std::optional<FifoSlot> slot = c->reader.take(c->fifo);
  if (!slot) {  // no receive posted yet: try again
    r->used = false;
    return ncclSuccess;
  }
  if (slot->tag != tag || size > slot->size)
    return ATOLL_ERROR(ncclInvalidUsage, "net IB %s: a send of %zu bytes with tag %d met a receive of %u bytes with tag %d",
                       c->port->name.c_str(), size, tag, slot->size, slot->tag).code();
  const auto* mr = static_cast<const Mr*>(mhandle);
  const std::vector<Chunk> chunks = ib::splitAcrossQps(size, static_cast<int>(c->qps.size()), kChunkAlign);
  r->pending = static_cast<int>(chunks.size());
  r->size = static_cast<uint32_t>(size);
  for (const Chunk& ch : chunks) {
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uint64_t>(data) + ch.offset;
    sge.length = static_cast<uint32_t>(ch.len);
    sge.lkey = mr != nullptr ? mr->mr->lkey : 0;
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = reinterpret_cast<uint64_t>(r);
    wr.sg_list = ch.len > 0 ? &sge : nullptr;
    wr.num_sge = ch.len > 0 ? 1 : 0;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = static_cast<uint32_t>(size);
    wr.wr.rdma.remote_addr = slot->addr + ch.offset;
    wr.wr.rdma.rkey = slot->rkey;
    if (ibv_post_send(c->qps[static_cast<size_t>(ch.qp)], &wr, &bad) != 0)
      return c->fail(std::string("ibv_post_send: ") + std::strerror(errno));
  }
  *request = r;
  return ncclSuccess;
}

ncclResult_t irecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void**, void** request) {
  *request = nullptr;
  if (n != 1) return ncclInvalidArgument;  // maxRecvs is 1
  auto* c = static_cast<Comm*>(recvComm);
  std::lock_guard<std::mutex> lock(gLock);
  if (c->failed) return ncclRemoteError;
  if (!c->credits.canPost()) return ncclSuccess;
  Request* r = c->take(false);
  if (r == nullptr) return ncclSuccess;
  const auto* mr = static_cast<const Mr*>(mhandles[0]);
  if (mr == nullptr || sizes[0] > UINT32_MAX) {
    r->used = false;
    return ncclInvalidArgument;
  }
  const ib::CreditGrant::Grant g = c->credits.post();
  FifoSlot& s = c->slots[g.slot];
  s = FifoSlot{reinterpret_cast<uint64_t>(data[0]), mr->mr->rkey, static_cast<uint32_t>(sizes[0]), tags[0], 0, g.seq};
  ibv_sge sge{};
  sge.addr = reinterpret_cast<uint64_t>(&s);
  sge.length = sizeof(FifoSlot);
  sge.lkey = c->slotsMr->lkey;
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = kFifoWrite;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
  wr.wr.rdma.remote_addr = c->peerFifo + static_cast<uint64_t>(g.slot) * sizeof(FifoSlot);
  wr.wr.rdma.rkey = c->peerFifoKey;
  if (ibv_post_send(c->qps[0], &wr, &bad) != 0) return c->fail(std::string("posting a receive's FIFO slot: ") + std::strerror(errno));
  r->progress = ib::RecvProgress(static_cast<int>(c->qps.size()));
  c->recvOrder.push_back(r);
  *request = r;
  return ncclSuccess;
}

ncclResult_t test(void* request, int* done, int* sizes) {
  auto* r = static_cast<Request*>(request);
  Comm* c = r->comm;
  std::lock_guard<std::mutex> lock(gLock);
  *done = 0;
  poll(c);
  if (r->done) {
    *done = 1;
    if (sizes != nullptr) sizes[0] = static_cast<int>(r->size);
    r->used = false;
    return ncclSuccess;
  }
  if (c->failed) return ncclRemoteError;
  if (c->watch.goneFor(kGrace)) return c->fail("the peer closed the connection");
  return ncclSuccess;
}

ncclResult_t closeComm(void* comm) {
  std::lock_guard<std::mutex> lock(gLock);
  destroyComm(static_cast<Comm*>(comm));
  return ncclSuccess;
}
ncclResult_t closeListen(void* listenComm) {
  std::lock_guard<std::mutex> lock(gLock);
  auto* l = static_cast<ListenComm*>(listenComm);
  for (PendingAccept& p : l->pending)
    if (p.comm != nullptr) destroyComm(p.comm);
  delete l;
  return ncclSuccess;
}
ncclResult_t finalize(void*) { return ncclSuccess; }  // ports stay open for the process

}  // namespace

const abi::Net11 kIbNet = {
    "IB",              init,     devices,          getProperties,   listen,     connect,
    accept,            regMr,    regMrDmaBuf,      deregMr,         isend,      irecv,
    hostnet::iflush,   test,     closeComm,        closeComm,       closeListen, hostnet::getDeviceMr,
    hostnet::irecvConsumed, hostnet::makeVDevice, finalize, hostnet::setNetAttr,
};

}  // namespace atl::net
