#include "core/comm_topology.h"

#include <sched.h>

#include "base/debug.h"
#include "base/params.h"
#include "core/comm.h"
#include "topology/detect.h"
#include "transports/net/net_plugin.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

namespace atl {

const topo::Graph* localGraph() {
  // Detection (hwloc) takes ~10 ms and its answer cannot change while the process runs, so ranks
  // that are threads of one process share it.
  static const std::optional<topo::Graph> g = []() -> std::optional<topo::Graph> {
    Result<topo::Graph> r = topo::localTopology();
    if (r.ok()) return std::move(*r);
    ATOLL_WARN("topology detection failed; continuing with host-level placement only");
    return std::nullopt;
  }();
  return g ? &*g : nullptr;
}

topo::RankDesc localPlacement(const topo::Graph* graph) {
  // Built per call: island and host-identity parameters are per rank (threads may differ).
  return topo::localRankDesc(graph != nullptr ? graph : localGraph());
}

LinkChoice chooseLinks(std::span<const topo::RankDesc> ranks, const topo::CommPlacement& placement,
                       const net::DeviceProps* netDevice, const char* netName) {
  // The model prices each level by the transport its links really use: shared memory between
  // ranks of one host unless shm is off, TCP otherwise. Islands emulated on one host
  // (ATOLL_ISLAND_SIZE) are therefore joined by shm, as they are in fact.
  const bool shm = !params::getBool(params::Id::ShmDisable);
  auto oneHost = [&](const std::vector<int>& members) {
    for (int r : members)
      if (ranks[static_cast<size_t>(r)].hostHash != ranks[static_cast<size_t>(members[0])].hostHash) return false;
    return true;
  };
  LinkChoice c;
  c.intraShm = shm;
  std::vector<int> everyone;
  if (placement.islands) {
    for (const std::vector<int>& members : placement.islands->members) {
      c.intraShm = c.intraShm && oneHost(members);
      everyone.insert(everyone.end(), members.begin(), members.end());
    }
  }
  const bool singleHost = !everyone.empty() && oneHost(everyone);
  c.interShm = shm && singleHost;
  c.fabric = tuning::FabricParams::defaults();
  // Over a plugin net, links that are not shm are priced by what its device reports (speed in
  // Mbps, latency in us, as NCCL's graph reads them); a figure it leaves at 0 keeps the socket's.
  tuning::LinkParams remote = c.fabric.model.socket;
  if (netDevice != nullptr) {
    if (netDevice->speedMbps > 0) remote.bwGBs = netDevice->speedMbps / 8000.0;
    if (netDevice->latencyUs > 0) remote.latUs = netDevice->latencyUs;
    c.remote = netName;
  }
  c.fabric.intra = c.intraShm ? c.fabric.model.shm : remote;
  c.fabric.inter = c.interShm ? c.fabric.model.shm : remote;
  // Between hosts, a host's ranks share its NICs (sockets use whichever the route picks; virtual
  // interfaces count as one). Loopback on one host has no uplink to share.
  int most = 1;  // ranks on the busiest host
  if (!singleHost) {
    std::map<uint64_t, int> perHost;
    int nics = 1 << 30;
    for (const topo::RankDesc& d : ranks) {
      ++perHost[d.hostHash];
      nics = std::min(nics, std::max(1, static_cast<int>(d.nics)));
    }
    for (const auto& [host, count] : perHost) most = std::max(most, count);
    c.fabric.interSharers = std::max(1.0, static_cast<double>(most) / nics);
    if (!c.intraShm) c.fabric.intraSharers = c.fabric.interSharers;
    // Islands that span hosts: the hops between a host's own ranks are shared memory (model.shm).
    if (!c.intraShm && shm && most > 1) {
      c.fabric.hostRanks = most;
      c.fabric.host = c.fabric.model.shm;
    }
  }
  // A fabric file states what links between islands really are (also for islands emulated on one
  // host with ATOLL_ISLAND_SIZE, which is how a big fabric's costs are tried out locally). Its
  // figure is per host, all NICs together, so every rank of the host shares it.
  if (placement.fromFabricFile) {
    c.fabric.inter = tuning::LinkParams{placement.levels.interBwGBs, placement.levels.interLatUs};
    if (!singleHost) c.fabric.interSharers = most;
    // Islands that span hosts are joined inside by the fabric's leaf (or island) level, per host as
    // well. The socket model's figure (loopback TCP) made the links inside an island look many
    // times faster than the 1 Gbit/s between emulated hosts, so hierarchical's rings inside islands
    // looked cheap and the selector took it over a ring 1.4x faster (perf/sim/README.md).
    if (!c.intraShm && !singleHost) {
      c.fabric.intra = tuning::LinkParams{placement.levels.intraBwGBs, placement.levels.intraLatUs};
      c.fabric.intraSharers = most;
    }
    c.fabric.islandHosts = placement.levels.islandHosts;
    c.fabric.groups = placement.levels.groups;
    c.fabric.group = tuning::LinkParams{placement.levels.groupBwGBs, placement.levels.groupLatUs};
    c.interFromFabric = true;
  }
  return c;
}

int lsaBlockSize(std::span<const topo::RankDesc> ranks) {
  const size_t n = ranks.size();
  size_t block = 1;
  while (block < n && ranks[block].hostHash == ranks[0].hostHash) ++block;
  if (n % block != 0) return 1;
  for (size_t start = 0; start < n; start += block) {
    for (size_t r = start; r < start + block; ++r)
      if (ranks[r].hostHash != ranks[start].hostHash) return 1;
    // A host seen again in a later block means its ranks are not one run.
    for (size_t other = 0; other < start; other += block)
      if (ranks[other].hostHash == ranks[start].hostHash) return 1;
  }
  return static_cast<int>(block);
}

bool outnumbersCores(int localRanks) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return false;
  return localRanks > CPU_COUNT(&set);
}

Status buildCommTopology(ncclComm* comm, std::span<const topo::RankDesc> ranks) {
  ATOLL_ASSIGN_OR_RETURN(topo::CommPlacement placement, topo::commPlacement(ranks));
  const std::shared_ptr<const topo::IslandMap>& islands = placement.islands;
  const size_t nIslands = islands ? islands->members.size() : 1;
  const LinkChoice links = chooseLinks(ranks, placement, comm->links.netDevice,
                                      comm->links.net ? comm->links.net->name() : nullptr);
  const tuning::FabricParams& fabric = links.fabric;
  ATOLL_ASSIGN_OR_RETURN(tuning::Selector selector,
                         tuning::Selector::create(comm->nranks, nIslands > 1 ? islands.get() : nullptr, fabric,
                                                  comm->links.nchannels));
  comm->topology.islands = nIslands > 1 ? islands : nullptr;
  comm->topology.selector = std::make_unique<tuning::Selector>(std::move(selector));
  comm->topology.lsaSize = lsaBlockSize(ranks);
  const uint64_t host = ranks[static_cast<size_t>(comm->rank)].hostHash;
  comm->topology.oversubscribed = outnumbersCores(static_cast<int>(
      std::count_if(ranks.begin(), ranks.end(), [&](const topo::RankDesc& r) { return r.hostHash == host; })));
  ATOLL_INFO(log::kInit, "comm %p rank %d: %zu island(s) by %s rule, links inside islands %s, between %s",
             (void*)comm, comm->rank, nIslands, topo::islandRuleName(placement.rule), links.intraShm ? "shm" : links.remote,
             links.interFromFabric ? "from the fabric file" : links.interShm ? "shm" : links.remote);
  return Status::Ok();
}

}  // namespace atl
