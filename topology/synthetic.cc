#include "topology/synthetic.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace atl::topo {

namespace {

// Synthetic hosts are current-generation: PCIe Gen5 x16, so a 400 Gb/s NIC is not PCI-bound.
constexpr double kPciGen5x16GBs = 63.0;

std::string hostName(int i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "node%04d", i);
  return buf;
}
std::string busId(int bus, int dev = 0) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0000:%02x:%02x.0", bus & 0xff, dev & 0x1f);
  return buf;
}

int addNode(Graph* g, NodeType t, std::string id, int numa, int index = -1) {
  Node n;
  n.type = t;
  n.id = std::move(id);
  n.numa = numa;
  n.index = index;
  return g->addNode(std::move(n));
}

}  // namespace

NodePlacement placeNode(const ClusterSpec& s, int node) {
  NodePlacement p;
  p.leaf = node / std::max(1, s.nodesPerLeaf);
  p.island = p.leaf / std::max(1, s.leavesPerIsland);
  p.group = s.islandsPerGroup > 0 ? p.island / s.islandsPerGroup : 0;
  return p;
}

Graph syntheticNode(const NodeSpec& spec, const std::string& prefix) {
  Graph g;
  const int sockets = std::max(1, spec.sockets);
  std::vector<int> cpus;
  for (int s = 0; s < sockets; ++s) {
    const int c = addNode(&g, NodeType::Cpu, prefix + "cpu" + std::to_string(s), s, s);
    const int m = addNode(&g, NodeType::Numa, prefix + "numa" + std::to_string(s), s, s);
    g.addLink(c, m, LinkType::Local, kSmpGBs, 0.1);
    for (int o : cpus) g.addLink(o, c, LinkType::Smp, kSmpGBs, 0.6);
    cpus.push_back(c);
  }
  // One PCI switch per GPU pair (or per GPU when odd), spread over sockets in order.
  const int gpus = std::max(0, spec.gpus);
  const int switches = std::max(1, (gpus + 1) / 2);
  std::vector<int> sw;
  for (int i = 0; i < switches; ++i) {
    const int socket = i * sockets / switches;
    const int p = addNode(&g, NodeType::Pci, prefix + busId(0x10 + i * 0x10), socket);
    g.addLink(cpus[static_cast<size_t>(socket)], p, LinkType::Pci, kPciGen5x16GBs * 2, 0.5);
    sw.push_back(p);
  }
  int nvs = -1;
  if (spec.nvswitch && gpus > 1) nvs = addNode(&g, NodeType::NvSwitch, prefix + "nvswitch", -1);
  for (int i = 0; i < gpus; ++i) {
    const int p = sw[static_cast<size_t>(i / 2)];
    const int gpu = addNode(&g, NodeType::Gpu, prefix + busId(0x11 + (i / 2) * 0x10, i % 2), g.node(p).numa, i);
    g.addLink(p, gpu, LinkType::Pci, kPciGen5x16GBs, 0.5);
    if (nvs >= 0) g.addLink(gpu, nvs, LinkType::NvLink, kNvLinkGBs * 18, 0.7, 18);
  }
  for (int r = 0; r < std::max(0, spec.nics); ++r) {
    const int p = sw[static_cast<size_t>(std::min(switches - 1, r * switches / std::max(1, spec.nics)))];
    Node n;
    n.type = NodeType::Nic;
    n.id = prefix + busId(0x12 + (r * switches / std::max(1, spec.nics)) * 0x10, r);
    n.name = "rail" + std::to_string(r);
    n.numa = g.node(p).numa;
    n.speedMbps = spec.nicGbps * 1000;
    const int nic = g.addNode(std::move(n));
    g.addLink(p, nic, LinkType::Pci, kPciGen5x16GBs, 0.5);
  }
  return g;
}

Graph syntheticClusterGraph(const ClusterSpec& spec) {
  Graph g;
  const double nicGBs = spec.node.nicGbps / 8;
  const int rails = std::max(1, spec.node.nics);
  std::vector<std::vector<int>> leafOf;  // [leaf][rail]
  std::vector<int> spineOf;              // [island]
  std::vector<int> groupOfSpine;
  for (int n = 0; n < spec.nodes; ++n) {
    const NodePlacement p = placeNode(spec, n);
    const std::string prefix = hostName(n) + "/";
    const Graph host = syntheticNode(spec.node, prefix);
    const int base = static_cast<int>(g.nodes().size());
    for (const Node& x : host.nodes()) g.addNode(x);
    for (const Link& l : host.links()) g.addLink(base + l.a, base + l.b, l.type, l.bwGBs, l.latUs, l.count);
    while (static_cast<int>(spineOf.size()) <= p.island) {
      const int island = static_cast<int>(spineOf.size());
      const int s = addNode(&g, NodeType::Spine, "spine" + std::to_string(island), -1, island);
      const int grp = placeNode(spec, island * std::max(1, spec.leavesPerIsland) * std::max(1, spec.nodesPerLeaf)).group;
      // Dragonfly+: spines of one group all-to-all at the group level, across groups at the global level.
      for (size_t o = 0; o < spineOf.size(); ++o) {
        const bool same = groupOfSpine[o] == grp;
        const double over = same ? spec.groupOversub : spec.globalOversub;
        g.addLink(spineOf[o], s, LinkType::Net, nicGBs * std::max(1, spec.nodesPerLeaf) / over,
                  same ? spec.groupLatUs : spec.globalLatUs);
      }
      spineOf.push_back(s);
      groupOfSpine.push_back(grp);
    }
    while (static_cast<int>(leafOf.size()) <= p.leaf) {
      const int leaf = static_cast<int>(leafOf.size());
      std::vector<int> perRail;
      for (int r = 0; r < rails; ++r) {
        const int l =
            addNode(&g, NodeType::Leaf, "leaf" + std::to_string(leaf) + "/rail" + std::to_string(r), -1, leaf);
        g.addLink(l, spineOf[static_cast<size_t>(p.island)], LinkType::Net,
                  nicGBs * std::max(1, spec.nodesPerLeaf) / spec.islandOversub, spec.islandLatUs);
        perRail.push_back(l);
      }
      leafOf.push_back(perRail);
    }
    int rail = 0;
    for (int i = base; i < static_cast<int>(g.nodes().size()); ++i)
      if (g.node(i).type == NodeType::Nic)
        g.addLink(i, leafOf[static_cast<size_t>(p.leaf)][static_cast<size_t>(rail++ % rails)], LinkType::Net, nicGBs,
                  spec.leafLatUs);
  }
  return g;
}

namespace {

/// Host `n`'s ranks (node-major), as every rank of a real job would describe itself.
void addHostRanks(Cluster* c, const NodeSpec& node, int n, const std::string& host) {
  for (int gpu = 0; gpu < node.gpus; ++gpu) {
    RankDesc d;
    d.hostHash = 0x9e3779b97f4a7c15ull * static_cast<uint64_t>(n + 1);
    setHostName(&d, host);
    d.numaNodes = std::max(1, node.sockets);
    d.gpus = node.gpus;
    d.nics = node.nics;
    d.netGBs = static_cast<float>(node.nicGbps / 8);
    c->ranks.push_back(d);
  }
}

/// Islands and levels from the fabric and the ranks, by the functions every rank of a real job
/// calls on ATOLL_FABRIC_FILE; each island's group is its first host's.
Status finishCluster(Cluster* c, const NodeSpec& node, const std::vector<NodePlacement>& place) {
  c->fabric.buildIndex();
  ATOLL_ASSIGN_OR_RETURN(c->islands, buildIslandMap(c->ranks, &c->fabric));
  for (const std::vector<int>& members : c->islands.members)
    c->groupOfIsland.push_back(place[static_cast<size_t>(members.front() / node.gpus)].group);
  c->levels = fabricLevels(c->ranks, c->islands, &c->fabric);
  return Status::Ok();
}

}  // namespace

Result<Cluster> syntheticCluster(const ClusterSpec& spec) {
  if (spec.nodes < 1 || spec.node.gpus < 1 || spec.nodesPerLeaf < 1 || spec.leavesPerIsland < 1 ||
      spec.islandsPerGroup < 0)
    return ATOLL_ERROR(ncclInvalidArgument,
                       "synthetic cluster: nodes, gpus, nodesPerLeaf, leavesPerIsland must be >= 1");
  Cluster c;
  const double nicGBs = spec.node.nicGbps / 8;
  Fabric& f = c.fabric;
  f.levels[static_cast<size_t>(Level::Host)] = LevelSpec{true, kNvLinkGBs * 18, 0.7, 1};
  f.levels[static_cast<size_t>(Level::Leaf)] = LevelSpec{true, nicGBs * std::max(1, spec.node.nics), spec.leafLatUs, 1};
  f.levels[static_cast<size_t>(Level::Island)] =
      LevelSpec{true, nicGBs * std::max(1, spec.node.nics), spec.islandLatUs, spec.islandOversub};
  if (spec.islandsPerGroup > 0)
    f.levels[static_cast<size_t>(Level::Group)] =
        LevelSpec{true, nicGBs * std::max(1, spec.node.nics), spec.groupLatUs, spec.groupOversub};
  f.levels[static_cast<size_t>(Level::Global)] =
      LevelSpec{true, nicGBs * std::max(1, spec.node.nics), spec.globalLatUs, spec.globalOversub};
  std::vector<NodePlacement> place;
  for (int n = 0; n < spec.nodes; ++n) {
    const NodePlacement p = place.emplace_back(placeNode(spec, n));
    f.hosts.push_back(FabricHost{hostName(n), "leaf" + std::to_string(p.leaf), "island" + std::to_string(p.island),
                                 "group" + std::to_string(p.group)});
    addHostRanks(&c, spec.node, n, hostName(n));
  }
  ATOLL_CHECK(finishCluster(&c, spec.node, place));
  return c;
}

Result<Cluster> fabricCluster(const NodeSpec& node, Fabric fabric, std::vector<NodePlacement>* placements) {
  if (node.gpus < 1) return ATOLL_ERROR(ncclInvalidArgument, "fabric cluster: a host needs at least one GPU");
  if (fabric.hosts.empty()) return ATOLL_ERROR(ncclInvalidArgument, "fabric cluster: the fabric lists no hosts");
  Cluster c;
  c.fabric = std::move(fabric);
  // Units are numbered in order of first appearance; a name means one unit wherever it appears.
  std::unordered_map<std::string, int> leaves, islands, groups;
  auto id = [](std::unordered_map<std::string, int>& ids, const std::string& name) {
    return ids.emplace(name, static_cast<int>(ids.size())).first->second;
  };
  std::vector<NodePlacement> place;
  for (size_t n = 0; n < c.fabric.hosts.size(); ++n) {
    const FabricHost& h = c.fabric.hosts[n];
    place.push_back(NodePlacement{id(leaves, h.leaf), id(islands, h.island), id(groups, h.group)});
    addHostRanks(&c, node, static_cast<int>(n), h.host);
  }
  ATOLL_CHECK(finishCluster(&c, node, place));
  if (placements != nullptr) *placements = std::move(place);
  return c;
}

}  // namespace atl::topo
