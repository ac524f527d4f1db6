// Collectives on device memory between the ranks of one node without staging through the host:
// every rank reads its peers' buffers where they lie (CUDA IPC, mapped once and kept by
// core/device_ipc_cache.h, or the pointer itself for a peer in this process) with the device
// kernels and copies. All-reduce: each rank reduces its slice from every input, then copies the
// peers' reduced slices. Reduce-scatter: each rank reduces its block. Reduce: the root reduces
// every input. All-gather and broadcast: each rank copies the inputs it needs. NCCL does the same
// over NVLink; here it runs from the proxy thread (core/device_proxy.h), after the group's
// streams reached the call.
//
// The ranks agree, by small all-gathers of host memory over the communicator's links, on every
// step: whether every rank's buffers are device memory it can export, whether every import worked,
// and whether every reduction and copy did, so either all of them take this path or all stage (or
// all fail), and a failure never leaves a peer waiting. The links, unlike the bootstrap, see an
// abort or a dead peer at once. Three exchanges per call (four for all-reduce), so the path
// starts at ATOLL_DEVICE_IPC_MIN bytes.
#pragma once

#include <cstdint>
#include <span>

#include "base/status.h"
#include "core/group.h"

namespace atl {

/// Runs `ops` when they are one collective this path takes (same answer on every rank) and
/// returns true; false when they are not, and nothing was done.
Result<bool> runDeviceIntraNode(ncclComm* comm, std::span<const OpDesc> ops, cudaStream_t stream);

/// Collectives `comm` ran on this path so far (tests check that the path was taken).
uint64_t deviceIntraNodeCalls(const ncclComm* comm);

}  // namespace atl
