// What distinguishes the perf tools: buffer layout per message size, how the collective is
// called, the bus-bandwidth factor, and which output element holds which input element.
#pragma once

#include <cstddef>
#include <string>

#include "nccl.h"
#include "perf/common/values.h"

namespace atl::perf {

/// HyperCube is nccl-tests' optional test: an all-gather made of log2(n) grouped send/recv steps.
enum class Coll {
  AllReduce,
  AllGather,
  ReduceScatter,
  Broadcast,
  Reduce,
  AlltoAll,
  SendRecv,
  Gather,
  Scatter,
  HyperCube
};

struct CollInfo {
  Coll coll;
  const char* name;  // as in "# Collective test starting: all_reduce_perf"
  const char* tool;
  bool reduces;  // takes a reduction op (-o)
  bool rooted;   // takes a root (-r)
};
const CollInfo& collInfo(Coll coll);

/// Element counts of one measurement on one rank. The in-place variant uses a single buffer of
/// max(sendCount, recvCount) elements with the input at inPlaceSend and the output at inPlaceRecv.
struct Layout {
  size_t sendCount = 0;
  size_t recvCount = 0;
  size_t paramCount = 0;  // the count argument of the API call
  size_t inPlaceSend = 0;
  size_t inPlaceRecv = 0;
  size_t bufferCount() const { return sendCount > recvCount ? sendCount : recvCount; }
};

/// Layout for a requested message of `bytes` (rounded down as nccl-tests does).
Layout layoutFor(Coll coll, size_t bytes, size_t elemSize, int nranks, int rank);
/// algbw = size / time * algBwFactor (1 except HyperCube, which counts only the bytes received);
/// busbw = algbw * busBwFactor.
double algBwFactor(Coll coll, int nranks);
double busBwFactor(Coll coll, int nranks);

/// Why the job cannot run this collective with that many ranks, ranks per thread (-g) and
/// aggregated iterations (-m); empty when it can.
std::string unsupportedReason(Coll coll, int nranks, int ranksPerThread, int aggIters);

/// One call of the collective on `stream` (sendrecv: a grouped send to rank+1 and receive from
/// rank-1; hypercube: one group per dimension). `device`: the buffers are device memory.
ncclResult_t issue(Coll coll, const void* send, void* recv, const Layout& layout, ncclDataType_t type, ncclRedOp_t op,
                   int root, int rank, int nranks, ncclComm_t comm, cudaStream_t stream, bool device);

/// Number of output elements rank holds after the call (0 on non-roots of reduce and gather).
size_t outputCount(Coll coll, const Layout& layout, int rank, int root);
/// Expected value of output element j on rank.
double expectedOutput(Coll coll, const Pattern& pattern, const Layout& layout, int rank, int root, int nranks,
                      size_t j);

}  // namespace atl::perf
