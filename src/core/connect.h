#pragma once
#include "core/comm.h"

namespace atl {
/// Builds the communicator's links: every peer on channels 0 and 1 (point-to-point, AlltoAll,
/// Gather, Scatter, and the non-ring algorithms; the double binary tree uses both) and the ring
/// neighbours on the others. Shared memory where both ends allow
/// it and share a host, sockets otherwise.
Status connectPeers(ncclComm* comm);
/// The PeerInfo.reserved flags this rank publishes.
int32_t peerFlags(bool allowShm);
}  // namespace atl
