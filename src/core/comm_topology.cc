#include "core/comm_topology.h"

#include "core/comm.h"
#include "core/debug.h"
#include "core/params.h"
#include "topology/detect.h"

namespace atl {

topo::RankDesc localPlacement() {
  // Detection (hwloc) takes ~10 ms and its answer cannot change while the process runs, so ranks
  // that are threads of one process share it.
  static const topo::RankDesc desc = [] {
    Result<topo::Graph> g = topo::localTopology();
    if (!g.ok()) ATOLL_WARN("topology detection failed; continuing with host-level placement only");
    return topo::localRankDesc(g.ok() ? &*g : nullptr);
  }();
  topo::RankDesc d = desc;
  // Island parameters are per rank (threads may differ), so they are read again each time.
  topo::RankDesc fresh = topo::localRankDesc(nullptr);
  d.islandId = fresh.islandId;
  d.islandSize = fresh.islandSize;
  d.hostHash = fresh.hostHash;
  return d;
}

Status buildCommTopology(ncclComm* comm, std::span<const topo::RankDesc> ranks) {
  ATOLL_ASSIGN_OR_RETURN(topo::CommPlacement placement, topo::commPlacement(ranks));
  const std::shared_ptr<const algo::IslandMap>& islands = placement.islands;
  const size_t nIslands = islands ? islands->members.size() : 1;
  // Inside an island ranks share a host (shared memory) unless shm is off or the island spans hosts.
  bool intraShm = !params::getBool(params::Id::ShmDisable);
  if (islands) {
    for (const std::vector<int>& members : islands->members)
      for (int r : members)
        intraShm = intraShm && ranks[static_cast<size_t>(r)].hostHash == ranks[static_cast<size_t>(members[0])].hostHash;
  }
  tuning::FabricParams fabric;
  fabric.intra = intraShm ? tuning::kShmLink : tuning::kSocketLink;
  // A fabric file states what links between islands really are; without one, TCP between islands.
  if (placement.rule == topo::IslandRule::Fabric)
    fabric.inter = tuning::LinkParams{placement.levels.interBwGBs, placement.levels.interLatUs};
  ATOLL_ASSIGN_OR_RETURN(tuning::Selector selector,
                         tuning::Selector::create(comm->nranks, nIslands > 1 ? islands.get() : nullptr, fabric,
                                                  comm->links.nchannels));
  comm->topology.islands = nIslands > 1 ? islands : nullptr;
  comm->topology.selector = std::make_unique<tuning::Selector>(std::move(selector));
  ATOLL_INFO(log::kInit, "comm %p rank %d: %zu island(s) by %s rule, intra-island links %s", (void*)comm, comm->rank,
             nIslands, topo::islandRuleName(placement.rule), intraShm ? "shm" : "socket");
  return Status::Ok();
}

}  // namespace atl
