// Atoll's C API, reached through dlopen of libatoll.so rather than by linking: torch maps NVIDIA's
// libnccl.so.2 into the same process, with the same nccl* names, and a plain link could bind our
// calls to NVIDIA's library. dlsym on our own handle (RTLD_DEEPBIND, so Atoll's internal calls stay
// inside Atoll too) cannot.
#pragma once

#include <string>

#include "nccl.h"

namespace atoll_torch {

struct AtollLib {
  ncclResult_t (*GetUniqueId)(ncclUniqueId*);
  ncclResult_t (*CommInitRankConfig)(ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*);
  ncclResult_t (*CommDestroy)(ncclComm_t);
  ncclResult_t (*CommAbort)(ncclComm_t);
  ncclResult_t (*CommSplit)(ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*);
  const char* (*GetErrorString)(ncclResult_t);
  const char* (*GetLastError)(ncclComm_t);
  ncclResult_t (*GetVersion)(int*);
  ncclResult_t (*GroupStart)();
  ncclResult_t (*GroupEnd)();
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*Broadcast)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Reduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*AllGather)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*ReduceScatter)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*AlltoAll)(const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
  ncclResult_t (*Gather)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Scatter)(const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Send)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*Recv)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
  ncclResult_t (*RedOpCreatePreMulSum)(ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t, ncclComm_t);
  ncclResult_t (*RedOpDestroy)(ncclRedOp_t, ncclComm_t);
  ncclResult_t (*MemAlloc)(void**, size_t);
  ncclResult_t (*MemFree)(void*);
  std::string path;
};

/// Loads Atoll once per process: $ATOLL_LIBRARY if set, else the libatoll.so this module was built
/// against. Throws with dlerror's text when it cannot.
const AtollLib& atoll();

}  // namespace atoll_torch
