#pragma once
#include "core/comm.h"

namespace atl {
/// Builds the communicator's links: every peer on channel 0 (point-to-point, AlltoAll, Gather,
/// Scatter) and the ring neighbours on the other channels. Shared memory where both ends allow
/// it and share a host, sockets otherwise.
Status connectPeers(ncclComm* comm);
/// The PeerInfo.reserved flags this rank publishes.
int32_t peerFlags(bool allowShm);
}  // namespace atl
