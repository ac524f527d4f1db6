#include "core/device_staging.h"

#include <algorithm>

#include "base/debug.h"
#include "core/comm.h"
#include "kernels/host/reduce.h"

namespace atl {
namespace {

constexpr size_t kAlign = 256;  // copy engines and SIMD kernels like aligned staging

size_t aligned(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

/// Bytes an op reads from sendbuff and writes to recvbuff on this rank (0: the buffer is unused).
struct Extent {
  size_t send = 0;
  size_t recv = 0;
};

Extent extentOf(const OpDesc& op, int nranks, int rank) {
  const size_t b = op.count * kernels::dtypeSize(op.dtype);
  const size_t all = b * static_cast<size_t>(nranks);
  const bool root = rank == op.root;
  switch (op.coll) {
    case algo::Coll::AllReduce: return {b, b};
    case algo::Coll::Broadcast: return {root ? b : 0, b};
    case algo::Coll::Reduce: return {b, root ? b : 0};
    case algo::Coll::AllGather: return {b, all};
    case algo::Coll::ReduceScatter: return {all, b};
    case algo::Coll::AlltoAll: return {all, all};
    case algo::Coll::Gather: return {b, root ? all : 0};
    case algo::Coll::Scatter: return {root ? all : 0, b};
    case algo::Coll::SendRecv: return op.isSend ? Extent{b, 0} : Extent{0, b};
  }
  return {};
}

bool isPreMulSumOnDevice(const ncclComm* comm, const OpDesc& op, const void** scalarPtr) {
  if (static_cast<int>(op.op) < ncclNumOps) return false;
  if (op.coll != algo::Coll::AllReduce && op.coll != algo::Coll::Reduce && op.coll != algo::Coll::ReduceScatter)
    return false;
  std::optional<PreMulSum> pm = comm->redops.find(op.op);
  if (!pm || pm->residence != ncclScalarDevice || !comm->device->needsStaging(pm->scalarPtr)) return false;
  *scalarPtr = pm->scalarPtr;
  return true;
}

}  // namespace

bool stagesCalls(const ncclComm* comm) { return comm->device != nullptr && comm->device->streamOrdered(); }

DeviceStaging::~DeviceStaging() {
  if (arena_ != nullptr) (void)device_.releaseStaging(arena_);
}

bool touchesDeviceMemory(const ncclComm* comm, const OpDesc& op) {
  const Extent e = extentOf(op, comm->nranks, comm->rank);
  const void* scalar = nullptr;
  return (e.send > 0 && comm->device->needsStaging(op.sendbuff)) ||
         (e.recv > 0 && comm->device->needsStaging(op.recvbuff)) || isPreMulSumOnDevice(comm, op, &scalar);
}

Status DeviceStaging::Calls::in() {
  for (const Copy& c : inputs) ATOLL_CHECK(owner_.device_.copy(owner_.cudaDev_, c.dst, c.src, c.bytes, owner_.copyStream_));
  return Status::Ok();
}

Status DeviceStaging::Calls::out() {
  for (const Copy& c : outputs) ATOLL_CHECK(owner_.device_.copy(owner_.cudaDev_, c.dst, c.src, c.bytes, owner_.copyStream_));
  return Status::Ok();
}

Status DeviceStaging::stage(const ncclComm* comm, std::span<OpDesc> ops) {
  calls_.clear();
  p2p_ = nullptr;
  // First pass: what each op needs staged, and how much memory that takes, so the arena moves at
  // most once.
  needs_.assign(ops.size(), Need{});
  size_t total = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const OpDesc& op = ops[i];
    const Extent e = extentOf(op, comm->nranks, comm->rank);
    Need& n = needs_[i];
    n.send = e.send > 0 && device_.needsStaging(op.sendbuff);
    n.recv = e.recv > 0 && device_.needsStaging(op.recvbuff);
    if (!isPreMulSumOnDevice(comm, op, &n.scalar)) n.scalar = nullptr;
    total += (n.send ? aligned(e.send) : 0) + (n.recv ? aligned(e.recv) : 0);  // the union of overlapping ones is smaller
    if (n.scalar != nullptr) total += kAlign;
  }
  if (total > capacity_) {
    if (arena_ != nullptr) ATOLL_CHECK(device_.releaseStaging(arena_));
    arena_ = nullptr;
    capacity_ = 0;
    const size_t want = std::max(total, size_t{1} << 20);
    ATOLL_ASSIGN_OR_RETURN(void* p, device_.allocateStaging(want));
    arena_ = static_cast<std::byte*>(p);
    capacity_ = want;
    ATOLL_INFO(log::kAlloc, "rank %d: %zu bytes of %s staging memory", comm->rank, want, device_.name());
  }
  size_t used = 0;
  auto take = [&](size_t bytes) {
    std::byte* p = arena_ + used;
    used += aligned(bytes);
    return p;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    OpDesc& op = ops[i];
    const Need& n = needs_[i];
    Calls* calls = nullptr;
    if (op.coll == algo::Coll::SendRecv) {
      if (p2p_ == nullptr) p2p_ = &calls_.emplace_back(*this);
      calls = p2p_;
    } else {
      calls = &calls_.emplace_back(*this);
    }
    op.staging = calls;
    const Extent e = extentOf(op, comm->nranks, comm->rank);
    auto* send = static_cast<const std::byte*>(op.sendbuff);
    auto* recv = static_cast<std::byte*>(op.recvbuff);
    std::byte* hostSend = const_cast<std::byte*>(send);
    std::byte* hostRecv = recv;
    if (n.send && n.recv && send < recv + e.recv && recv < send + e.send) {
      // Overlapping (in place, or NCCL's in-place all-gather layouts): one staged range keeps the
      // offsets between them, so the plan sees the same in-place shape.
      const std::byte* lo = std::min<const std::byte*>(send, recv);
      const std::byte* hi = std::max<const std::byte*>(send + e.send, recv + e.recv);
      std::byte* base = take(static_cast<size_t>(hi - lo));
      hostSend = base + (send - lo);
      hostRecv = base + (recv - lo);
    } else {
      if (n.send) hostSend = take(e.send);
      if (n.recv) hostRecv = take(e.recv);
    }
    if (n.send) calls->inputs.push_back({hostSend, send, e.send});
    if (n.recv) calls->outputs.push_back({recv, hostRecv, e.recv});
    // A buffer the op ignores keeps its relation to the other (ncclBcast passes one buffer).
    if (e.send == 0 && op.sendbuff == op.recvbuff) hostSend = hostRecv;
    if (e.recv == 0 && op.recvbuff == op.sendbuff) hostRecv = hostSend;
    op.sendbuff = hostSend;
    op.recvbuff = hostRecv;
    if (n.scalar != nullptr) {
      std::byte* slot = take(kernels::dtypeSize(op.dtype));
      calls->inputs.push_back({slot, n.scalar, kernels::dtypeSize(op.dtype)});
      op.scalarHost = slot;
    }
  }
  return Status::Ok();
}

}  // namespace atl
