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
  uint64_t sendAddr = 0;  // this process's pointers (used as they are by peers in the same process)
  uint64_t recvAddr = 0;
  device::IpcHandle send;
  device::IpcHandle recv;
};
static_assert(sizeof(Entry) == 24 + 2 * sizeof(device::IpcHandle), "Entry is wire format");

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

bool qualifies(const ncclComm* comm, std::span<const OpDesc> ops) {
  if (ops.size() != 1 || comm->nranks < 2 || !comm->device->hasKernels()) return false;
  const OpDesc& op = ops[0];
  if (op.coll != algo::Coll::AllReduce || op.op > ncclAvg) return false;  // PreMulSum: staged
  if (comm->topology.lsaSize != comm->nranks) return false;               // not one node
  const int64_t min = params::getInt(params::Id::DeviceIpcMin);
  return min >= 0 && op.count * kernels::dtypeSize(op.dtype) >= static_cast<uint64_t>(min);
}

/// The peers' buffers as this process reaches them: pointers for peers in this process, mappings
/// from the process's cache (core/device_ipc_cache.h) for the others, held for the call.
class PeerBuffers {
 public:
  PeerBuffers(const device::Device& dev, int onDevice) : dev_(dev), onDevice_(onDevice) {}
  ~PeerBuffers() {
    for (const device::IpcHandle& h : held_) DeviceIpcCache::process().release(dev_, h, onDevice_);
  }
  Status open(const std::vector<Entry>& entries, int self) {
    send_.resize(entries.size());
    recv_.resize(entries.size());
    const int32_t pid = static_cast<int32_t>(::getpid());
    for (size_t p = 0; p < entries.size(); ++p) {
      const Entry& e = entries[p];
      if (static_cast<int>(p) == self || e.send.pid == pid) {
        send_[p] = reinterpret_cast<std::byte*>(e.sendAddr);
        recv_[p] = reinterpret_cast<std::byte*>(e.recvAddr);
        continue;
      }
      ATOLL_ASSIGN_OR_RETURN(send_[p], map(e.send));
      ATOLL_ASSIGN_OR_RETURN(recv_[p], map(e.recv));  // in place: the same entry, used twice
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

/// Reduces this rank's slice from every rank's input into its output, its own input first (in
/// place, the output is that input, and must be read before it is written).
Status reduceSlice(ncclComm* comm, const OpDesc& op, const PeerBuffers& peers, cudaStream_t stream) {
  const device::Device& dev = *comm->device;
  const size_t elem = kernels::dtypeSize(op.dtype);
  size_t lo = 0, hi = 0;
  slice(op.count, comm->nranks, comm->rank, &lo, &hi);
  if (hi == lo) return Status::Ok();
  const size_t self = static_cast<size_t>(comm->rank);
  const size_t n = static_cast<size_t>(comm->nranks);
  device::EwCall call;
  call.dt = op.dtype;
  call.count = hi - lo;
  call.op = op.op == ncclProd ? EwOp::Prod : op.op == ncclMax ? EwOp::Max : op.op == ncclMin ? EwOp::Min : EwOp::Sum;
  call.dst = peers.recv(self) + lo * elem;
  call.a = peers.send(self) + lo * elem;
  for (size_t k = 1; k < n; ++k) {
    call.b = peers.send((self + k) % n) + lo * elem;
    ATOLL_CHECK(dev.elementwise(comm->cudaDev, call, stream));
    call.a = call.dst;
  }
  if (op.op == ncclAvg) {
    call.op = EwOp::Divide;
    call.b = nullptr;
    call.divisor = comm->nranks;
    ATOLL_CHECK(dev.elementwise(comm->cudaDev, call, stream));
  }
  return dev.synchronize(comm->cudaDev, stream);
}

/// Copies every peer's reduced slice into this rank's output.
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
  return dev.synchronize(comm->cudaDev, stream);
}

Result<bool> runDirect(ncclComm* comm, const OpDesc& op, cudaStream_t stream) {
  const device::Device& dev = *comm->device;
  const size_t bytes = op.count * kernels::dtypeSize(op.dtype);

  // 1. Who can take part: device memory on every rank, exported.
  std::vector<Entry> entries(static_cast<size_t>(comm->nranks));
  Entry& mine = entries[static_cast<size_t>(comm->rank)];
  if (dev.needsStaging(op.sendbuff) && dev.needsStaging(op.recvbuff)) {
    Result<device::IpcHandle> s = dev.exportMemory(op.sendbuff);
    Result<device::IpcHandle> r = dev.exportMemory(op.recvbuff);
    if (s.ok() && r.ok() && s->offset + bytes <= s->size && r->offset + bytes <= r->size) {
      mine.ok = 1;
      mine.dev = comm->cudaDev;
      mine.send = *s;
      mine.recv = *r;
      mine.sendAddr = reinterpret_cast<uintptr_t>(op.sendbuff);
      mine.recvAddr = reinterpret_cast<uintptr_t>(op.recvbuff);
    }
  }
  ATOLL_CHECK(hostAllGather(
      comm, std::span<std::byte>(reinterpret_cast<std::byte*>(entries.data()), entries.size() * sizeof(Entry)),
      sizeof(Entry)));
  if (!std::all_of(entries.begin(), entries.end(), [](const Entry& e) { return e.ok == 1; })) return false;
  // Ranks of one process reach each other's pointers only on one device (no peer access is
  // enabled, and CUDA IPC refuses the exporting process): stage otherwise. Every rank sees the
  // same entries, so every rank decides the same.
  for (const Entry& a : entries)
    for (const Entry& b : entries)
      if (a.send.pid == b.send.pid && a.dev != b.dev) return false;

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

  // 2. Every rank maps its peers' buffers, or all of them stage.
  PeerBuffers peers(dev, comm->cudaDev);
  Status opened = peers.open(entries, comm->rank);
  if (!opened.ok()) ATOLL_INFO(log::kP2p, "rank %d: cannot map a peer's device buffer (%s): staging instead", comm->rank,
                               lastErrorMessage().c_str());
  ATOLL_ASSIGN_OR_RETURN(bool allOpened, agree(opened.ok()));
  if (!allOpened) return false;

  // 3. Reduce-scatter: every rank's inputs are ready (their streams passed the call before step 1).
  Status reduced = reduceSlice(comm, op, peers, stream);
  ATOLL_ASSIGN_OR_RETURN(bool allReduced, agree(reduced.ok()));
  if (!reduced.ok()) return reduced;
  if (!allReduced) return ATOLL_ERROR(ncclRemoteError, "rank %d: a peer's device reduction failed", comm->rank);

  // 4. All-gather; then no peer reads this rank's buffers any more, and its streams may go on.
  Status gathered = gatherSlices(comm, op, peers, stream);
  ATOLL_ASSIGN_OR_RETURN(bool allGathered, agree(gathered.ok()));
  if (!gathered.ok()) return gathered;
  if (!allGathered) return ATOLL_ERROR(ncclRemoteError, "rank %d: a peer's device copy failed", comm->rank);
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
    reportPath(comm, algo::Coll::AllReduce, ops[0].count, ops[0].dtype, algo::Algo::Direct, "DeviceIpc");
    comm->deviceIntraNodeCalls.fetch_add(1, std::memory_order_relaxed);
  }
  return ran;
}

uint64_t deviceIntraNodeCalls(const ncclComm* comm) {
  return comm->deviceIntraNodeCalls.load(std::memory_order_relaxed);
}

}  // namespace atl
