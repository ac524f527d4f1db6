// What a communicator knows about where its ranks run: the islands (topology/) and the algorithm
// selector built on them (tuning/). Computed once at init from descriptors every rank exchanged, so
// every rank derives the same islands and makes the same choices.
#pragma once

#include <memory>
#include <span>

#include "algorithms/schedule.h"
#include "base/status.h"
#include "topology/islands.h"
#include "tuning/selector.h"

struct ncclComm;

namespace atl {
namespace net {
struct DeviceProps;
}

struct CommTopology {
  std::shared_ptr<const topo::IslandMap> islands;  // null: one island
  std::unique_ptr<tuning::Selector> selector;
  // NCCL's LSA team (ranks that reach each other's memory: here, one host) as its device API
  // describes it: consecutive blocks of lsaSize ranks. 1 when hosts do not hold equal consecutive blocks.
  int lsaSize = 1;
  // More ranks of this communicator on this host than cores this process may run on: a waiting
  // rank should give its core up soon (ATOLL_SPIN_COUNT's default), as its peers need it.
  bool oversubscribed = false;
};

/// Whether `localRanks` ranks would outnumber the cores this process may run on.
bool outnumbersCores(int localRanks);

/// The LSA block size for these descriptors (indexed by rank): the ranks per host when every host
/// holds one run of that many consecutive ranks, else 1.
int lsaBlockSize(std::span<const topo::RankDesc> ranks);

/// Which transport the cost model assumes at each level, and the numbers it prices them with.
struct LinkChoice {
  tuning::FabricParams fabric;
  bool intraShm = false;   // links inside islands are shared memory (else sockets)
  bool interShm = false;   // links between islands are shared memory (islands emulated on one host)
  bool interFromFabric = false;  // the fabric file gave the numbers between islands
  const char* remote = "socket";  // what carries links that are not shm: "socket" or a plugin net's name
};
/// Decided from every rank's descriptor, the islands, NCCL_SHM_DISABLE and the plugin net device
/// (null: the socket transport); what the connections made by core/connect.cc will actually be.
LinkChoice chooseLinks(std::span<const topo::RankDesc> ranks, const topo::CommPlacement& placement,
                       const net::DeviceProps* netDevice = nullptr, const char* netName = nullptr);

/// This host's detected topology (detection runs once per process); null when detection failed.
const topo::Graph* localGraph();
/// This rank's descriptor for the exchange at init, from `graph` (the local graph with the net's
/// devices added, core/net_placement.h) or, when null, from localGraph().
topo::RankDesc localPlacement(const topo::Graph* graph = nullptr);
/// Builds islands and selector from every rank's descriptor (indexed by rank).
Status buildCommTopology(ncclComm* comm, std::span<const topo::RankDesc> ranks);

}  // namespace atl
