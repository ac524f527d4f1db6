#include "perf/common/collectives.h"

namespace atl::perf {
namespace {

constexpr CollInfo kColls[] = {
    {Coll::AllReduce, "AllReduce", "all_reduce_perf", true, false},
    {Coll::AllGather, "AllGather", "all_gather_perf", false, false},
    {Coll::ReduceScatter, "ReduceScatter", "reduce_scatter_perf", true, false},
    {Coll::Broadcast, "Broadcast", "broadcast_perf", false, true},
    {Coll::Reduce, "Reduce", "reduce_perf", true, true},
    {Coll::AlltoAll, "AlltoAll", "alltoall_perf", false, false},
    {Coll::SendRecv, "SendRecv", "sendrecv_perf", false, false},
    {Coll::Gather, "Gather", "gather_perf", false, true},
    {Coll::Scatter, "Scatter", "scatter_perf", false, true},
};

}  // namespace

const CollInfo& collInfo(Coll coll) { return kColls[static_cast<int>(coll)]; }

Layout layoutFor(Coll coll, size_t bytes, size_t elemSize, int nranks, int rank) {
  const size_t count = bytes / elemSize;
  const size_t n = static_cast<size_t>(nranks);
  const size_t r = static_cast<size_t>(rank);
  Layout l;
  switch (coll) {
    case Coll::AllGather:
    case Coll::Gather:
      // Size is the gathered total; each rank contributes count / nranks.
      l.paramCount = l.sendCount = count / n;
      l.recvCount = l.sendCount * n;
      l.inPlaceSend = l.sendCount * r;
      break;
    case Coll::ReduceScatter:
    case Coll::Scatter:
      l.paramCount = l.recvCount = count / n;
      l.sendCount = l.recvCount * n;
      l.inPlaceRecv = l.recvCount * r;
      break;
    case Coll::AlltoAll:
      l.paramCount = count / n;
      l.sendCount = l.recvCount = l.paramCount * n;
      break;
    default:
      l.paramCount = l.sendCount = l.recvCount = count;
      break;
  }
  return l;
}

double busBwFactor(Coll coll, int nranks) {
  const double n = nranks;
  switch (coll) {
    case Coll::AllReduce:
      return 2.0 * (n - 1) / n;
    case Coll::AllGather:
    case Coll::ReduceScatter:
    case Coll::AlltoAll:
    case Coll::Gather:
    case Coll::Scatter:
      return (n - 1) / n;
    default:
      return 1.0;
  }
}

ncclResult_t issue(Coll coll, const void* send, void* recv, const Layout& l, ncclDataType_t type, ncclRedOp_t op,
                   int root, int rank, int nranks, ncclComm_t comm) {
  const size_t c = l.paramCount;
  switch (coll) {
    case Coll::AllReduce:
      return ncclAllReduce(send, recv, c, type, op, comm, nullptr);
    case Coll::AllGather:
      return ncclAllGather(send, recv, c, type, comm, nullptr);
    case Coll::ReduceScatter:
      return ncclReduceScatter(send, recv, c, type, op, comm, nullptr);
    case Coll::Broadcast:
      return ncclBroadcast(send, recv, c, type, root, comm, nullptr);
    case Coll::Reduce:
      return ncclReduce(send, recv, c, type, op, root, comm, nullptr);
    case Coll::AlltoAll:
      return ncclAlltoAll(send, recv, c, type, comm, nullptr);
    case Coll::Gather:
      return ncclGather(send, recv, c, type, root, comm, nullptr);
    case Coll::Scatter:
      return ncclScatter(send, recv, c, type, root, comm, nullptr);
    case Coll::SendRecv: {
      ncclResult_t res = ncclGroupStart();
      if (res != ncclSuccess) return res;
      ncclResult_t sres = ncclSend(send, c, type, (rank + 1) % nranks, comm, nullptr);
      ncclResult_t rres = ncclRecv(recv, c, type, (rank + nranks - 1) % nranks, comm, nullptr);
      res = ncclGroupEnd();
      if (sres != ncclSuccess) return sres;
      return rres != ncclSuccess ? rres : res;
    }
  }
  return ncclInvalidArgument;
}

size_t outputCount(Coll coll, const Layout& l, int rank, int root) {
  switch (coll) {
    case Coll::Reduce:
    case Coll::Gather:
      return rank == root ? l.recvCount : 0;
    default:
      return l.recvCount;
  }
}

double expectedOutput(Coll coll, const Pattern& p, const Layout& l, int rank, int root, int nranks, size_t j) {
  const size_t pc = l.paramCount;
  const size_t r = static_cast<size_t>(rank);
  switch (coll) {
    case Coll::AllReduce:
    case Coll::Reduce:
      return p.reduced(j);
    case Coll::ReduceScatter:
      return p.reduced(r * pc + j);
    case Coll::AllGather:
    case Coll::Gather:
      return p.input(static_cast<int>(j / pc), j % pc);
    case Coll::Broadcast:
      return p.input(root, j);
    case Coll::Scatter:
      return p.input(root, r * pc + j);
    case Coll::AlltoAll:
      return p.input(static_cast<int>(j / pc), r * pc + j % pc);
    case Coll::SendRecv:
      return p.input((rank + nranks - 1) % nranks, j);
  }
  return 0;
}

}  // namespace atl::perf
