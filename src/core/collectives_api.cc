// Collective and point-to-point entry points: validate every argument (a clear
// ncclInvalidArgument instead of a crash), then queue the call on the current group.
#include <climits>
#include <cstring>
#include <utility>

#include "core/comm.h"
#include "core/group.h"
#include "core/nccl_api.h"
#include "kernels/host/reduce.h"

using namespace atl;
using algo::Coll;

namespace {

bool mulOverflows(size_t a, size_t b, size_t* out) { return __builtin_mul_overflow(a, b, out); }

Status validate(OpDesc& op, const char* fn) {
  ATOLL_CHECK(checkCommUsable(op.comm, fn));
  const int n = op.comm->nranks, rank = op.comm->rank;
  if (op.rawDtype < 0 || op.rawDtype >= ncclNumTypes)
    return ATOLL_ERROR(ncclInvalidArgument, "%s: invalid datatype %d", fn, op.rawDtype);
  op.dtype = static_cast<ncclDataType_t>(op.rawDtype);
  const size_t esz = kernels::dtypeSize(op.dtype);
  if (algo::reduces(op.coll)) {
    int v = op.rawOp;
    if (v < 0 || v > ncclMaxRedOp) return ATOLL_ERROR(ncclInvalidArgument, "%s: invalid reduction op %d", fn, v);
    op.op = static_cast<ncclRedOp_t>(v);
    if (v >= ncclNumOps) {
      std::optional<PreMulSum> pm = op.comm->redops.find(op.op);
      if (!pm) return ATOLL_ERROR(ncclInvalidArgument, "%s: reduction op %d was not created on this communicator", fn, v);
      if (pm->dtype != op.dtype)
        return ATOLL_ERROR(ncclInvalidArgument, "%s: reduction op %d was created for datatype %d, not %d", fn, v,
                           static_cast<int>(pm->dtype), static_cast<int>(op.dtype));
    }
  }
  const bool rooted = op.coll == Coll::Broadcast || op.coll == Coll::Reduce || op.coll == Coll::Gather ||
                      op.coll == Coll::Scatter || op.coll == Coll::SendRecv;
  if (rooted && (op.root < 0 || op.root >= n))
    return ATOLL_ERROR(ncclInvalidArgument, "%s: %s %d is out of range [0, %d)", fn,
                       op.coll == Coll::SendRecv ? "peer" : "root", op.root, n);
  // Total bytes each buffer spans, checked for overflow before anything else uses them.
  size_t bytes = 0, total = 0;
  if (mulOverflows(op.count, esz, &bytes) || mulOverflows(bytes, static_cast<size_t>(n), &total) ||
      total > static_cast<size_t>(LLONG_MAX))
    return ATOLL_ERROR(ncclInvalidArgument, "%s: count %zu of %zu-byte elements overflows the address space", fn,
                       op.count, esz);
  if (op.count == 0) return Status::Ok();
  bool needSend = true, needRecv = true;
  switch (op.coll) {
    case Coll::Broadcast: needSend = rank == op.root; break;
    case Coll::Reduce: needRecv = rank == op.root; break;
    case Coll::Gather: needRecv = rank == op.root; break;
    case Coll::Scatter: needSend = rank == op.root; break;
    case Coll::SendRecv: needSend = op.isSend, needRecv = !op.isSend; break;
    default: break;
  }
  if (needSend && op.sendbuff == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "%s: sendbuff is NULL with count %zu", fn, op.count);
  if (needRecv && op.recvbuff == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "%s: recvbuff is NULL with count %zu", fn, op.count);
  return Status::Ok();
}

// By rvalue reference, not by value: the caller's freshly built OpDesc is read in place. A by-value
// copy compiles to vector loads of the scalar stores that just built it, and the failed store
// forwarding costs about a fifth of an 8-byte all-reduce on one rank.
ncclResult_t submit(OpDesc&& op, const char* fn) {
  return apiGuard(fn, [&]() -> Status {
    ATOLL_CHECK(validate(op, fn));
    log::setThreadRank(op.comm->rank);
    ATOLL_TRACE(log::kColl, "%s: count %zu datatype %d op %d root %d comm %p", fn, op.count, op.rawDtype, op.rawOp,
                op.root, (void*)op.comm);
    return enqueueOp(op);
  });
}

OpDesc make(cudaStream_t stream, ncclComm_t comm, Coll coll, const void* s, void* r, size_t count, ncclDataType_t dt,
            ncclRedOp_t op = ncclSum, int root = 0) {
  OpDesc d;
  d.stream = stream;
  d.comm = comm;
  d.coll = coll;
  d.sendbuff = s;
  d.recvbuff = r;
  d.count = count;
  d.rawDtype = rawEnum(dt);
  d.rawOp = rawEnum(op);
  d.root = root;
  return d;
}

}  // namespace

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return submit(make(stream, comm, Coll::AllReduce, sendbuff, recvbuff, count, datatype, op), "ncclAllReduce");
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  return submit(make(stream, comm, Coll::Reduce, sendbuff, recvbuff, count, datatype, op, root), "ncclReduce");
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return submit(make(stream, comm, Coll::Broadcast, sendbuff, recvbuff, count, datatype, ncclSum, root), "ncclBroadcast");
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream) {
  return submit(make(stream, comm, Coll::Broadcast, buff, buff, count, datatype, ncclSum, root), "ncclBcast");
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream) {
  return submit(make(stream, comm, Coll::AllGather, sendbuff, recvbuff, sendcount, datatype), "ncclAllGather");
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  return submit(make(stream, comm, Coll::ReduceScatter, sendbuff, recvbuff, recvcount, datatype, op), "ncclReduceScatter");
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream) {
  return submit(make(stream, comm, Coll::AlltoAll, sendbuff, recvbuff, count, datatype), "ncclAlltoAll");
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return submit(make(stream, comm, Coll::Gather, sendbuff, recvbuff, count, datatype, ncclSum, root), "ncclGather");
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  return submit(make(stream, comm, Coll::Scatter, sendbuff, recvbuff, count, datatype, ncclSum, root), "ncclScatter");
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclComm_t comm, cudaStream_t stream) {
  OpDesc d = make(stream, comm, Coll::SendRecv, sendbuff, nullptr, count, datatype, ncclSum, peer);
  d.isSend = true;
  return submit(std::move(d), "ncclSend");
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream) {
  return submit(make(stream, comm, Coll::SendRecv, nullptr, recvbuff, count, datatype, ncclSum, peer), "ncclRecv");
}

NCCL_API(ncclResult_t, ncclGroupStart, void) {
  return apiGuard(__func__, [] { return groupStart(); });
}

NCCL_API(ncclResult_t, ncclGroupEnd, void) {
  return apiGuard(__func__, [] { return groupEnd(); });
}

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) {
  return apiGuard(__func__, [&]() -> Status {
    (void)simInfo;
    return ATOLL_ERROR(ncclInvalidUsage, "ncclGroupSimulateEnd is not implemented yet in Atoll");
  });
}
