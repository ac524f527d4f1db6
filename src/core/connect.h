// Links between ranks, made on demand (NCCL_RUNTIME_CONNECT=1, the default): a call's plans name
// the (channel, peer) links they use, and the ones the communicator lacks are made right before
// the call runs, then kept. A rank therefore holds only what its schedules use: ring neighbours
// per channel, tree parent and children, island leaders, point-to-point peers.
//
// Why this cannot deadlock: every rank of a collective builds the same plans, and a plan's links
// are symmetric (a rank sends to p on channel c exactly when p receives from it there), so both
// ends of a missing link make it during the same call. Setup runs in phases over every link of
// the whole batch — prepare all, connect all (never waits), finish the accepting ends, finish the
// dialling ends, settle all — so a rank waits only for a peer's earlier phase, also when one
// thread drives several ranks in a group.
#pragma once

#include <span>
#include <vector>

#include "core/comm.h"

namespace atl {

/// Links made during init: none on demand; with NCCL_RUNTIME_CONNECT=0 every peer on channels 0
/// and 1 and ring neighbours on the others.
/// Ends with a bootstrap barrier either way.
Status connectAtInit(ncclComm* comm);
/// The links `schedule` uses, sorted and unique.
std::vector<engine::LinkKey> scheduleLinks(const algo::Schedule& schedule);
/// Makes, for each communicator of a batch, the links in `needed[i]` it lacks. Returns one status
/// per communicator (a failure of one does not stop the others' setup).
std::vector<Status> ensureLinks(std::span<ncclComm* const> comms, std::span<const std::vector<engine::LinkKey>> needed);
/// The PeerInfo.flags this rank publishes.
uint32_t peerFlags(bool allowShm);
/// Whether links are made during init rather than on demand.
bool eagerLinks();

}  // namespace atl
