#include "topology/islands.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "base/debug.h"
#include "base/host_id.h"
#include "base/params.h"

namespace atl::topo {

const char* islandRuleName(IslandRule r) {
  switch (r) {
    case IslandRule::Size:
      return "ATOLL_ISLAND_SIZE";
    case IslandRule::Id:
      return "ATOLL_ISLAND_ID";
    case IslandRule::Fabric:
      return "ATOLL_FABRIC_FILE";
    case IslandRule::Host:
      return "host";
  }
  return "?";
}

void setHostName(RankDesc* d, const std::string& name) {
  std::memset(d->hostName, 0, sizeof d->hostName);
  std::memcpy(d->hostName, name.data(), std::min(name.size(), sizeof d->hostName - 1));
}

void encodeRankDesc(codec::Writer& w, const RankDesc& d) {
  w.u64(d.hostHash);
  w.i32(d.islandId);
  w.i32(d.islandSize);
  w.i32(d.numaNodes);
  w.i32(d.gpus);
  w.i32(d.nics);
  w.f32(d.netGBs);
  w.text(d.hostName, sizeof d.hostName);
}

RankDesc decodeRankDesc(codec::Reader& r) {
  RankDesc d;
  d.hostHash = r.u64();
  d.islandId = r.i32();
  d.islandSize = r.i32();
  d.numaNodes = r.i32();
  d.gpus = r.i32();
  d.nics = r.i32();
  d.netGBs = r.f32();
  r.text(d.hostName, sizeof d.hostName);
  return d;
}

RankDesc localRankDesc(const Graph* local) {
  RankDesc d;
  d.hostHash = hostHash();
  // An overridden host identity (emulated hosts, containers sharing a kernel) is also the name the
  // fabric file knows the host by.
  const std::string& forced = params::getString(params::Id::HostId);
  setHostName(&d, forced.empty() ? hostName() : forced);
  d.islandId = static_cast<int32_t>(params::getInt(params::Id::IslandId));
  d.islandSize = static_cast<int32_t>(params::getInt(params::Id::IslandSize));
  if (local) {
    d.numaNodes = static_cast<int32_t>(local->ofType(NodeType::Numa).size());
    d.gpus = static_cast<int32_t>(local->ofType(NodeType::Gpu).size());
    // With the communicator's net devices in the graph, those are what the host's ranks share;
    // otherwise every NIC the host has (sockets use whichever the route picks).
    std::vector<int> nics = local->ofType(NodeType::Net);
    if (nics.empty()) nics = local->ofType(NodeType::Nic);
    d.nics = static_cast<int32_t>(nics.size());
    for (int n : nics) d.netGBs = std::max(d.netGBs, static_cast<float>(local->node(n).speedMbps / 8000.0));
  }
  return d;
}

namespace {

std::string hostOf(const RankDesc& d) { return std::string(d.hostName, strnlen(d.hostName, sizeof d.hostName)); }

}  // namespace

Result<IslandMap> buildIslandMap(std::span<const RankDesc> ranks, const Fabric* fabric, IslandRule* rule) {
  const int n = static_cast<int>(ranks.size());
  if (n == 0) return ATOLL_ERROR(ncclInvalidArgument, "islands: no ranks");
  IslandMap map;
  map.islandOf.resize(static_cast<size_t>(n));
  const int size = ranks[0].islandSize;
  for (int r = 1; r < n; ++r)
    if (ranks[static_cast<size_t>(r)].islandSize != size) {
      ATOLL_WARN("ATOLL_ISLAND_SIZE differs between rank 0 (%d) and rank %d (%d); using rank 0's", size, r,
                 ranks[static_cast<size_t>(r)].islandSize);
      break;
    }
  IslandRule used = IslandRule::Host;
  if (size > 0) {
    used = IslandRule::Size;
    for (int r = 0; r < n; ++r) map.islandOf[static_cast<size_t>(r)] = r / size;
  } else {
    // One key per rank by the first rule that applies to it; islands are numbered by first rank.
    std::map<std::string, int> index;
    bool anyId = false, anyFabric = false;
    for (int r = 0; r < n; ++r) {
      const RankDesc& d = ranks[static_cast<size_t>(r)];
      std::string key;
      const FabricHost* fh = fabric ? fabric->findHost(hostOf(d)) : nullptr;
      if (d.islandId >= 0) {
        key = "id:" + std::to_string(d.islandId);
        anyId = true;
      } else if (fh) {
        key = "fabric:" + fh->island;
        anyFabric = true;
      } else {
        key = "host:" + std::to_string(d.hostHash);
      }
      const auto [it, fresh] = index.emplace(key, static_cast<int>(index.size()));
      (void)fresh;
      map.islandOf[static_cast<size_t>(r)] = it->second;
    }
    used = anyId ? IslandRule::Id : anyFabric ? IslandRule::Fabric : IslandRule::Host;
  }
  int islands = 0;
  for (int i : map.islandOf) islands = std::max(islands, i + 1);
  map.members.assign(static_cast<size_t>(islands), {});
  for (int r = 0; r < n; ++r) map.members[static_cast<size_t>(map.islandOf[static_cast<size_t>(r)])].push_back(r);
  if (rule) *rule = used;
  return map;
}

Result<std::shared_ptr<const IslandMap>> islandsFromParams(std::span<const RankDesc> ranks, IslandRule* rule) {
  const std::string& path = params::getString(params::Id::FabricFile);
  Fabric fabric;
  if (!path.empty()) {
    ATOLL_ASSIGN_OR_RETURN(fabric, readFabricFile(path));
  }
  IslandRule used = IslandRule::Host;
  ATOLL_ASSIGN_OR_RETURN(IslandMap map, buildIslandMap(ranks, path.empty() ? nullptr : &fabric, &used));
  if (rule) *rule = used;
  ATOLL_INFO(log::kGraph, "%zu ranks in %zu islands (by %s)", ranks.size(), map.members.size(), islandRuleName(used));
  return std::shared_ptr<const IslandMap>(std::make_shared<IslandMap>(std::move(map)));
}

namespace {

// The innermost level containing every host in `hosts`, given where each host sits.
Level spanOf(const std::vector<const FabricHost*>& hosts) {
  if (hosts.empty()) return Level::Host;
  std::set<std::string> h, l, i, g;
  for (const FabricHost* x : hosts) {
    if (!x) return Level::Global;  // a host the fabric does not place: assume the worst
    h.insert(x->host);
    l.insert(x->leaf);
    i.insert(x->island);
    g.insert(x->group);
  }
  if (h.size() == 1) return Level::Host;
  if (l.size() == 1) return Level::Leaf;
  if (i.size() == 1) return Level::Island;
  if (g.size() == 1) return Level::Group;
  return Level::Global;
}

// The figures of level `at`, or of the nearest level above it that the fabric gives.
const LevelSpec* specAtOrAbove(const Fabric& f, Level at) {
  for (int l = static_cast<int>(at); l < kLevels; ++l)
    if (f.levels[static_cast<size_t>(l)].set) return &f.levels[static_cast<size_t>(l)];
  return nullptr;
}

}  // namespace

FabricLevels fabricLevels(std::span<const RankDesc> ranks, const IslandMap& islands, const Fabric* fabric) {
  FabricLevels out;
  // Emulated islands on one host and unknown placements keep the defaults unless the fabric says more.
  std::set<uint64_t> allHosts;
  for (const RankDesc& d : ranks) allHosts.insert(d.hostHash);
  float nicGBs = 0;
  for (const RankDesc& d : ranks) nicGBs = (nicGBs == 0 || (d.netGBs > 0 && d.netGBs < nicGBs)) ? d.netGBs : nicGBs;

  Level intra = Level::Host;
  size_t fewest = SIZE_MAX;
  std::vector<const FabricHost*> everyone;
  for (const std::vector<int>& members : islands.members) {
    std::vector<const FabricHost*> hosts;
    std::set<uint64_t> distinct;
    for (int r : members) {
      const RankDesc& d = ranks[static_cast<size_t>(r)];
      distinct.insert(d.hostHash);
      const FabricHost* fh = fabric ? fabric->findHost(hostOf(d)) : nullptr;
      hosts.push_back(fh);
      everyone.push_back(fh);
    }
    const Level span = distinct.size() <= 1 ? Level::Host : fabric ? spanOf(hosts) : Level::Global;
    intra = std::max(intra, span);
    fewest = std::min(fewest, distinct.size());
  }
  out.islandHosts = static_cast<int>(std::max<size_t>(1, std::min(fewest, allHosts.size())));
  // Inside one host only the host level applies: a leaf's figures say nothing about shared memory.
  const LevelSpec* intraSpec = nullptr;
  if (fabric)
    intraSpec = intra == Level::Host ? (fabric->level(Level::Host).set ? &fabric->level(Level::Host) : nullptr)
                                     : specAtOrAbove(*fabric, intra);
  if (const LevelSpec* s = intraSpec) {
    out.intraBwGBs = s->effectiveGBs();
    out.intraLatUs = s->latUs;
  } else if (intra != Level::Host && nicGBs > 0) {
    out.intraBwGBs = nicGBs;
    out.intraLatUs = out.interLatUs;
  }

  if (islands.members.size() <= 1) {
    out.interBwGBs = out.intraBwGBs;
    out.interLatUs = out.intraLatUs;
    return out;
  }
  const Level inter = allHosts.size() <= 1 ? Level::Host : fabric ? spanOf(everyone) : Level::Global;
  // Islands on one host are an emulation: the inter-island figures are what is being emulated, so
  // only a fabric file's explicit figures replace the defaults.
  const LevelSpec* s = nullptr;
  if (fabric) s = specAtOrAbove(*fabric, inter == Level::Host ? Level::Island : std::max(inter, Level::Island));
  if (s) {
    out.interBwGBs = s->effectiveGBs();
    out.interLatUs = s->latUs;
  } else if (allHosts.size() > 1 && nicGBs > 0) {
    out.interBwGBs = nicGBs;
  }
  if (fabric && inter == Level::Global && fabric->level(Level::Group).set) {
    std::set<std::string> groups;
    for (const FabricHost* x : everyone) groups.insert(x ? x->group : std::string());
    if (groups.size() > 1 && s == &fabric->level(Level::Global)) {
      out.groups = static_cast<int>(groups.size());
      out.groupBwGBs = fabric->level(Level::Group).effectiveGBs();
      out.groupLatUs = fabric->level(Level::Group).latUs;
    }
  }
  return out;
}

Result<CommPlacement> commPlacement(std::span<const RankDesc> ranks) {
  const std::string& path = params::getString(params::Id::FabricFile);
  Fabric fabric;
  if (!path.empty()) {
    ATOLL_ASSIGN_OR_RETURN(fabric, readFabricFile(path));
  }
  const Fabric* f = path.empty() ? nullptr : &fabric;
  CommPlacement out;
  ATOLL_ASSIGN_OR_RETURN(IslandMap map, buildIslandMap(ranks, f, &out.rule));
  out.levels = fabricLevels(ranks, map, f);
  out.fromFabricFile = f != nullptr;
  ATOLL_INFO(log::kGraph, "%zu ranks in %zu islands (by %s); intra %.2f GB/s %.2f us, inter %.2f GB/s %.2f us",
             ranks.size(), map.members.size(), islandRuleName(out.rule), out.levels.intraBwGBs, out.levels.intraLatUs,
             out.levels.interBwGBs, out.levels.interLatUs);
  out.islands = std::make_shared<const IslandMap>(std::move(map));
  return out;
}

}  // namespace atl::topo
