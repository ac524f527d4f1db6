// Group semantics: calls between ncclGroupStart and ncclGroupEnd are queued on this thread and
// run together at the outermost ncclGroupEnd; a call outside a group is a group of one.
#pragma once

#include <functional>
#include <span>

#include "algorithms/schedule.h"
#include "base/status.h"
#include "nccl.h"

namespace atl::engine {
class CallStaging;
}

namespace atl {

/// One validated API call waiting for its group to end.
struct OpDesc {
  ncclComm* comm = nullptr;
  algo::Coll coll = algo::Coll::AllReduce;
  const void* sendbuff = nullptr;
  void* recvbuff = nullptr;
  size_t count = 0;
  ncclDataType_t dtype = ncclInt8;  // set from rawDtype/rawOp once validated: an enum must never
  ncclRedOp_t op = ncclSum;         // hold a value outside its range (UB, flagged by UBSan)
  int rawDtype = 0;
  int rawOp = 0;
  int root = 0;  // root, or the peer of a send/recv
  bool isSend = false;
  cudaStream_t stream = nullptr;
  // Set by core/device_staging.h where the buffers are device memory: the copies around this
  // call's plan, and the host copy of a PreMulSum scalar that lives on the device.
  engine::CallStaging* staging = nullptr;
  const void* scalarHost = nullptr;
};

Status groupStart();
Status groupEnd();
bool inGroup();

/// Queues an operation; runs it at once (as a group of one) when no group is open.
Status enqueueOp(const OpDesc& op);
/// Runs validated ops of one group on this thread (the device proxy's, core/device_proxy.h).
Status runBatch(std::span<const OpDesc> ops);
/// Queues a communicator initialisation (ncclCommInitRank inside a group); runs now otherwise.
Status enqueueInit(std::function<Status()> init);
/// A communicator derived from `comm` (split, shrink, grow): inside a group the derivation is
/// collective with the others queued there, so it runs at ncclGroupEnd on a thread of its own.
Status deferToGroupEnd(ncclComm* comm, ncclComm_t* newcomm, const char* fn, std::function<Status()> derive);

}  // namespace atl
