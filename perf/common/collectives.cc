#include "perf/common/collectives.h"

#include <cstring>

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
    {Coll::HyperCube, "HyperCube", "hypercube_perf", false, false},
};

// Before the step over dimension k (mask = 1 << k) each rank holds the aligned run of `mask` blocks
// that contains its own; it trades that run for its partner's, doubling what it holds. Each step
// sends what the previous one received, so the steps are separate groups.
ncclResult_t hyperCube(const void* send, void* recv, size_t count, ncclDataType_t type, int rank, int nranks,
                       ncclComm_t comm, cudaStream_t stream, bool device) {
  const size_t block = count * typeInfo(type).size;
  std::byte* out = static_cast<std::byte*>(recv);
  std::byte* own = out + static_cast<size_t>(rank) * block;
  // In place the block is already there. Device memory is not the host's to copy: the block
  // goes to itself through the library, in stream order.
  if (own != send && !device) std::memcpy(own, send, block);
  if (own != send && device) {
    ncclResult_t res = ncclGroupStart();
    if (res != ncclSuccess) return res;
    ncclResult_t sres = ncclSend(send, count, type, rank, comm, stream);
    ncclResult_t rres = ncclRecv(own, count, type, rank, comm, stream);
    res = ncclGroupEnd();
    if (sres != ncclSuccess) return sres;
    if (rres != ncclSuccess) return rres;
    if (res != ncclSuccess) return res;
  }
  for (int mask = 1; mask < nranks; mask <<= 1) {
    const size_t held = static_cast<size_t>(rank & ~(mask - 1));
    const size_t wanted = held ^ static_cast<size_t>(mask);
    const size_t n = count * static_cast<size_t>(mask);
    ncclResult_t res = ncclGroupStart();
    if (res != ncclSuccess) return res;
    ncclResult_t sres = ncclSend(out + held * block, n, type, rank ^ mask, comm, stream);
    ncclResult_t rres = ncclRecv(out + wanted * block, n, type, rank ^ mask, comm, stream);
    res = ncclGroupEnd();
    if (sres != ncclSuccess) return sres;
    if (rres != ncclSuccess) return rres;
    if (res != ncclSuccess) return res;
  }
  return ncclSuccess;
}

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
    case Coll::HyperCube:
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

double algBwFactor(Coll coll, int nranks) {
  // nccl-tests' hypercube algbw is count * (n - 1) / time: a rank receives n - 1 of the n blocks.
  return coll == Coll::HyperCube ? (nranks - 1.0) / nranks : 1.0;
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
                   int root, int rank, int nranks, ncclComm_t comm, cudaStream_t stream, bool device) {
  const size_t c = l.paramCount;
  switch (coll) {
    case Coll::AllReduce:
      return ncclAllReduce(send, recv, c, type, op, comm, stream);
    case Coll::AllGather:
      return ncclAllGather(send, recv, c, type, comm, stream);
    case Coll::ReduceScatter:
      return ncclReduceScatter(send, recv, c, type, op, comm, stream);
    case Coll::Broadcast:
      return ncclBroadcast(send, recv, c, type, root, comm, stream);
    case Coll::Reduce:
      return ncclReduce(send, recv, c, type, op, root, comm, stream);
    case Coll::AlltoAll:
      return ncclAlltoAll(send, recv, c, type, comm, stream);
    case Coll::Gather:
      return ncclGather(send, recv, c, type, root, comm, stream);
    case Coll::Scatter:
      return ncclScatter(send, recv, c, type, root, comm, stream);
    case Coll::HyperCube:
      return hyperCube(send, recv, c, type, rank, nranks, comm, stream, device);
    case Coll::SendRecv: {
      ncclResult_t res = ncclGroupStart();
      if (res != ncclSuccess) return res;
      ncclResult_t sres = ncclSend(send, c, type, (rank + 1) % nranks, comm, stream);
      ncclResult_t rres = ncclRecv(recv, c, type, (rank + nranks - 1) % nranks, comm, stream);
      res = ncclGroupEnd();
      if (sres != ncclSuccess) return sres;
      return rres != ncclSuccess ? rres : res;
    }
  }
  return ncclInvalidArgument;
}

std::string unsupportedReason(Coll coll, int nranks, int ranksPerThread, int aggIters) {
  if (coll != Coll::HyperCube) return {};
  if (nranks < 1 || (nranks & (nranks - 1)) != 0)
    return "the hypercube needs a power-of-two number of ranks (rank r exchanges with r ^ 2^k), got " +
           std::to_string(nranks);
  // An enclosing group would merge every dimension's step into one batch, sending blocks before
  // they have arrived.
  if (ranksPerThread > 1)
    return "-g " + std::to_string(ranksPerThread) + " is not supported (use -t or one process per rank)";
  if (aggIters > 1) return "-m " + std::to_string(aggIters) + " is not supported";
  return {};
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
    case Coll::HyperCube:
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
