#include "core/device_intranode.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/debug.h"
#include "base/params.h"
#include "base/tsan.h"
#include "core/call_report.h"
#include "core/comm.h"
#include "core/device_ipc_cache.h"
#include "kernels/host/reduce.h"

namespace atl {
namespace {

using kernels::cuda::EwOp;

/// What each rank publishes: whether it can take part, and where its buffers are.
struct Entry {
  uint8_t ok = 0;
  uint8_t reserved[3] = {};
  int32_t dev = 0;  // CUDA device index
  int32_t pid = 0;  // peers in the same process use the pointers as they are
  int32_t reserved2 = 0;
  uint64_t sendAddr = 0;
  uint64_t recvAddr = 0;
  device::IpcHandle send;  // exported where peers read the buffer (Roles)
  device::IpcHandle recv;
};
static_assert(sizeof(Entry) == 32 + 2 * sizeof(device::IpcHandle), "Entry is wire format");

/// An in-place all-gather of host memory over the communicator's own links (the host engine, as a
/// group of one): unlike the bootstrap, it sees an abort and a peer's death at once, and reports
/// them as every collective does.
Status hostAllGather(ncclComm* comm, std::span<std::byte> data, size_t perRank) {
  OpDesc op;
  op.comm = comm;
  op.coll = algo::Coll::AllGather;
  op.sendbuff = data.data() + static_cast<size_t>(comm->rank) * perRank;
  op.recvbuff = data.data();
  op.count = perRank;
  op.dtype = ncclInt8;
  op.rawDtype = ncclInt8;
  op.op = ncclSum;
  op.rawOp = ncclSum;
  return runBatch(std::span<const OpDesc>(&op, 1));
}

/// True when every rank says `mine`: an all-gather of one byte per rank, which is also a barrier.
Result<bool> everyone(ncclComm* comm, bool mine) {
  std::vector<std::byte> flags(static_cast<size_t>(comm->nranks));
  flags[static_cast<size_t>(comm->rank)] = std::byte{mine ? uint8_t{1} : uint8_t{0}};
  ATOLL_CHECK(hostAllGather(comm, flags, 1));
  return std::all_of(flags.begin(), flags.end(), [](std::byte b) { return b == std::byte{1}; });
}

/// What one rank's part in a collective touches: its own buffers it reads or writes, and those
/// its peers read. Every rank derives every peer's from the call, so none of it is sent.
struct Roles {
  bool usesSend = false, usesRecv = false;    // this rank reads its input / writes its output
  bool sharesSend = false, sharesRecv = false;  // peers read this rank's input / output
};

Roles rolesOf(const OpDesc& op, int rank) {
  const bool root = rank == op.root;
  switch (op.coll) {
    case algo::Coll::AllReduce:  // peers read the input, then this rank's reduced slice
      return {true, true, true, true};
    case algo::Coll::ReduceScatter:
    case algo::Coll::AllGather:
      return {true, true, true, false};
    case algo::Coll::Broadcast:  // every rank copies from the root's input
      return {root, true, root, false};
    case algo::Coll::Reduce:  // the root reads every input
      return {root, root, !root, false};
    default:
      return {};
  }
}

/// Bytes of the input and the output of `op` on one rank (NCCL's count is per rank for the
/// all-gather's input and the reduce-scatter's output).
void bufferBytes(const OpDesc& op, int nranks, size_t* send, size_t* recv) {
  const size_t one = op.count * kernels::dtypeSize(op.dtype), all = one * static_cast<size_t>(nranks);
  *send = op.coll == algo::Coll::ReduceScatter ? all : one;
  *recv = op.coll == algo::Coll::AllGather ? all : one;
}

bool qualifies(const ncclComm* comm, std::span<const OpDesc> ops) {
  if (ops.size() != 1 || comm->nranks < 2) return false;
  const OpDesc& op = ops[0];
  switch (op.coll) {
    case algo::Coll::AllReduce:
    case algo::Coll::ReduceScatter:
    case algo::Coll::Reduce:
      if (op.op > ncclAvg || !comm->device->hasKernels()) return false;  // PreMulSum: staged
      break;
    case algo::Coll::AllGather:
    case algo::Coll::Broadcast:
      break;
    default:
      return false;
  }
  if (comm->topology.lsaSize != comm->nranks) return false;  // not one node
  const int64_t min = params::getInt(params::Id::DeviceIpcMin);
  size_t send = 0, recv = 0;
  bufferBytes(op, comm->nranks, &send, &recv);
  return min >= 0 && op.count > 0 && std::max(send, recv) >= static_cast<uint64_t>(min);
}

/// The peers' buffers as this process reaches them: pointers for peers in this process, mappings
/// from the process's cache (core/device_ipc_cache.h) for the others, held for the call. Only
/// the buffers a peer shares (Roles) are mapped.
class PeerBuffers {
 public:
  PeerBuffers(const device::Device& dev, int onDevice) : dev_(dev), onDevice_(onDevice) {}
  ~PeerBuffers() {
    for (const device::IpcHandle& h : held_) DeviceIpcCache::process().release(dev_, h, onDevice_);
  }
  Status open(const OpDesc& op, const std::vector<Entry>& entries, int self) {
    send_.assign(entries.size(), nullptr);
    recv_.assign(entries.size(), nullptr);
    const int32_t pid = static_cast<int32_t>(::getpid());
    for (size_t p = 0; p < entries.size(); ++p) {
      const Entry& e = entries[p];
      const Roles roles = rolesOf(op, static_cast<int>(p));
      if (static_cast<int>(p) == self || e.pid == pid) {
        // A rank of this process on another GPU: its pointers, once this device may reach
        // that one's memory (CUDA IPC refuses the exporting process).
        if ((roles.sharesSend || roles.sharesRecv) && e.dev != onDevice_)
          ATOLL_CHECK(dev_.enablePeerAccess(onDevice_, e.dev));
        send_[p] = reinterpret_cast<std::byte*>(e.sendAddr);
        recv_[p] = reinterpret_cast<std::byte*>(e.recvAddr);
        continue;
      }
      if (roles.sharesSend) {
        ATOLL_ASSIGN_OR_RETURN(send_[p], map(e.send));
      }
      if (roles.sharesRecv) {
        ATOLL_ASSIGN_OR_RETURN(recv_[p], map(e.recv));  // in place: one cache entry, used twice
      }
    }
    return Status::Ok();
  }
  std::byte* send(size_t p) const { return send_[p]; }
  std::byte* recv(size_t p) const { return recv_[p]; }

 private:
  Result<std::byte*> map(const device::IpcHandle& h) {
    ATOLL_ASSIGN_OR_RETURN(std::byte* ptr, DeviceIpcCache::process().acquire(dev_, h, onDevice_));
    held_.push_back(h);
    return ptr;
  }

  const device::Device& dev_;
  const int onDevice_;
  std::vector<std::byte*> send_, recv_;
  std::vector<device::IpcHandle> held_;
};

/// Rank `r`'s slice of `count` elements: whole 16-element steps, so every slice but the last
/// starts 16-byte aligned when the buffer does (the kernels' packs).
void slice(size_t count, int nranks, int r, size_t* lo, size_t* hi) {
  const size_t per = ((count + static_cast<size_t>(nranks) - 1) / static_cast<size_t>(nranks) + 15) / 16 * 16;
  *lo = std::min(count, per * static_cast<size_t>(r));
  *hi = std::min(count, *lo + per);
}

/// Enqueues dst = inputs[0] op inputs[1] op ... over `count` elements (then / nranks for avg).
/// inputs[0] may be dst itself (in place): the first kernel reads it before anything writes it.
Status reduceInto(ncclComm* comm, const OpDesc& op, std::byte* dst, std::span<const std::byte* const> inputs,
                  size_t count, cudaStream_t stream) {
  const device::Device& dev = *comm->device;
  device::EwCall call;
  call.dt = op.dtype;
  call.count = count;
  call.op = op.op == ncclProd ? EwOp::Prod : op.op == ncclMax ? EwOp::Max : op.op == ncclMin ? EwOp::Min : EwOp::Sum;
  call.dst = dst;
  call.a = inputs[0];
  for (size_t k = 1; k < inputs.size(); ++k) {
    call.b = inputs[k];
    ATOLL_CHECK(dev.elementwise(comm->cudaDev, call, stream));
    call.a = call.dst;
  }
  if (op.op == ncclAvg) {
    call.op = EwOp::Divide;
    call.b = nullptr;
    call.divisor = comm->nranks;
    ATOLL_CHECK(dev.elementwise(comm->cudaDev, call, stream));
  }
  return Status::Ok();
}

/// Every rank's input at element `at`, this rank's first (its output may be that input).
std::vector<const std::byte*> inputsAt(const ncclComm* comm, const PeerBuffers& peers, size_t at) {
  std::vector<const std::byte*> in;
  const size_t n = static_cast<size_t>(comm->nranks), self = static_cast<size_t>(comm->rank);
  for (size_t k = 0; k < n; ++k) in.push_back(peers.send((self + k) % n) + at);
  return in;
}

/// This rank's share of the work that reads its peers' inputs, enqueued on `stream`: the
/// all-reduce's first half (its slice), the reduce-scatter's block, the root's reduce, the
/// all-gather's and the broadcast's copies.
Status readPeers(ncclComm* comm, const OpDesc& op, const PeerBuffers& peers, cudaStream_t stream) {
  const device::Device& dev = *comm->device;
  const size_t elem = kernels::dtypeSize(op.dtype), bytes = op.count * elem;
  const size_t self = static_cast<size_t>(comm->rank);
  std::byte* out = peers.recv(self);
  switch (op.coll) {
    case algo::Coll::AllReduce: {
      size_t lo = 0, hi = 0;
      slice(op.count, comm->nranks, comm->rank, &lo, &hi);
      if (hi == lo) return Status::Ok();
      return reduceInto(comm, op, out + lo * elem, inputsAt(comm, peers, lo * elem), hi - lo, stream);
    }
    case algo::Coll::ReduceScatter:
      return reduceInto(comm, op, out, inputsAt(comm, peers, self * bytes), op.count, stream);
    case algo::Coll::Reduce:
      if (comm->rank != op.root) return Status::Ok();
      return reduceInto(comm, op, out, inputsAt(comm, peers, 0), op.count, stream);
    case algo::Coll::AllGather:
      for (size_t p = 0; p < static_cast<size_t>(comm->nranks); ++p) {
        std::byte* to = out + p * bytes;
        if (to != peers.send(p)) ATOLL_CHECK(dev.copyAsync(comm->cudaDev, to, peers.send(p), bytes, stream));
      }
      return Status::Ok();
    case algo::Coll::Broadcast: {
      const std::byte* from = peers.send(static_cast<size_t>(op.root));
      if (out != from) ATOLL_CHECK(dev.copyAsync(comm->cudaDev, out, from, bytes, stream));
      return Status::Ok();
    }
    default:
      return ATOLL_ERROR(ncclInternalError, "direct device path: %s is not one of its collectives",
                         algo::collName(op.coll));
  }
}

/// The all-reduce's second half: copies every peer's reduced slice into this rank's output.
Status gatherSlices(ncclComm* comm, const OpDesc& op, const PeerBuffers& peers, cudaStream_t stream) {
  const device::Device& dev = *comm->device;
  const size_t elem = kernels::dtypeSize(op.dtype);
  const size_t self = static_cast<size_t>(comm->rank);
  for (int p = 0; p < comm->nranks; ++p) {
    if (static_cast<size_t>(p) == self) continue;
    size_t lo = 0, hi = 0;
    slice(op.count, comm->nranks, p, &lo, &hi);
    if (hi == lo) continue;
    ATOLL_CHECK(dev.copyAsync(comm->cudaDev, peers.recv(self) + lo * elem, peers.recv(static_cast<size_t>(p)) + lo * elem,
                              (hi - lo) * elem, stream));
  }
  return Status::Ok();
}

/// Whether this rank can take part: every buffer it touches is device memory, and every buffer
/// its peers read is exported, large enough. Fills `mine` when it can.
bool publish(const ncclComm* comm, const OpDesc& op, Entry* mine) {
  const device::Device& dev = *comm->device;
  const Roles roles = rolesOf(op, comm->rank);
  size_t sendBytes = 0, recvBytes = 0;
  bufferBytes(op, comm->nranks, &sendBytes, &recvBytes);
  auto onDevice = [&](const void* p) { return p != nullptr && dev.needsStaging(p); };
  if ((roles.usesSend || roles.sharesSend) && !onDevice(op.sendbuff)) return false;
  if ((roles.usesRecv || roles.sharesRecv) && !onDevice(op.recvbuff)) return false;
  auto exported = [&](const void* p, size_t bytes, device::IpcHandle* h) {
    Result<device::IpcHandle> r = dev.exportMemory(p);
    if (!r.ok() || r->offset + bytes > r->size) return false;
    *h = *r;
    return true;
  };
  if (roles.sharesSend && !exported(op.sendbuff, sendBytes, &mine->send)) return false;
  if (roles.sharesRecv && !exported(op.recvbuff, recvBytes, &mine->recv)) return false;
  mine->ok = 1;
  mine->dev = comm->cudaDev;
  mine->pid = static_cast<int32_t>(::getpid());
  mine->sendAddr = reinterpret_cast<uintptr_t>(op.sendbuff);
  mine->recvAddr = reinterpret_cast<uintptr_t>(op.recvbuff);
  return true;
}

Result<bool> runDirect(ncclComm* comm, const OpDesc& op, cudaStream_t stream) {
  const device::Device& dev = *comm->device;

  // 1. Who can take part: device memory on every rank, exported where peers read it.
  std::vector<Entry> entries(static_cast<size_t>(comm->nranks));
  (void)publish(comm, op, &entries[static_cast<size_t>(comm->rank)]);
  ATOLL_CHECK(hostAllGather(
      comm, std::span<std::byte>(reinterpret_cast<std::byte*>(entries.data()), entries.size() * sizeof(Entry)),
      sizeof(Entry)));
  if (!std::all_of(entries.begin(), entries.end(), [](const Entry& e) { return e.ok == 1; })) return false;

  // The exchanges below order each rank's stream work against its peers' (a rank reads a peer's
  // input before the peer overwrites it in place). They run over shared-memory links, mapped
  // twice in one process, where ThreadSanitizer sees no edge (base/tsan.h). Name it by a key per
  // rank in this process's memory (device addresses are no keys: TSan keeps no state for memory
  // mapped without access); ranks of other communicators share the keys, which only adds edges.
  static char tsanKeys[1024];
  auto agree = [&](bool ok) -> Result<bool> {
    tsan::release(&tsanKeys[static_cast<size_t>(comm->rank) % sizeof(tsanKeys)]);
    Result<bool> all = everyone(comm, ok);
    for (int p = 0; p < comm->nranks; ++p) tsan::acquire(&tsanKeys[static_cast<size_t>(p) % sizeof(tsanKeys)]);
    return all;
  };
  // A step every rank ran: its own failure first, else a peer's.
  auto step = [&](Status mine, const char* what) -> Status {
    if (mine.ok()) mine = dev.synchronize(comm->cudaDev, stream);
    ATOLL_ASSIGN_OR_RETURN(bool all, agree(mine.ok()));
    if (!mine.ok()) return mine;
    if (!all) return ATOLL_ERROR(ncclRemoteError, "rank %d: a peer's device %s failed", comm->rank, what);
    return Status::Ok();
  };

  // 2. Every rank maps its peers' buffers (or, in this process on another GPU, enables peer
  // access to them), or all of them stage.
  PeerBuffers peers(dev, comm->cudaDev);
  Status opened = peers.open(op, entries, comm->rank);
  if (!opened.ok()) ATOLL_INFO(log::kP2p, "rank %d: cannot map a peer's device buffer (%s): staging instead", comm->rank,
                               lastErrorMessage().c_str());
  ATOLL_ASSIGN_OR_RETURN(bool allOpened, agree(opened.ok()));
  if (!allOpened) return false;

  // 3. Every rank's inputs are ready (their streams passed the call before step 1). After this
  // step no rank reads a peer's input any more.
  ATOLL_CHECK(step(readPeers(comm, op, peers, stream), algo::reduces(op.coll) ? "reduction" : "copy"));
  // 4. The all-reduce's all-gather of the reduced slices.
  if (op.coll == algo::Coll::AllReduce) ATOLL_CHECK(step(gatherSlices(comm, op, peers, stream), "copy"));
  return true;
}

}  // namespace

Result<bool> runDeviceIntraNode(ncclComm* comm, std::span<const OpDesc> ops, cudaStream_t stream) {
  if (!qualifies(comm, ops)) return false;
  // The exchanges are collectives of their own and report themselves (core/call_report.h); the
  // call's report must be the all-reduce's, or the staged run's when it falls back.
  const std::optional<CallReport> before = comm->lastCall;
  Result<bool> ran = runDirect(comm, ops[0], stream);
  comm->lastCall = before;
  if (ran.ok() && *ran) {
    reportPath(comm, ops[0].coll, ops[0].count, ops[0].dtype, algo::Algo::Direct, "DeviceIpc");
    comm->deviceIntraNodeCalls.fetch_add(1, std::memory_order_relaxed);
  }
  return ran;
}

uint64_t deviceIntraNodeCalls(const ncclComm* comm) {
  return comm->deviceIntraNodeCalls.load(std::memory_order_relaxed);
}

}  // namespace atl
