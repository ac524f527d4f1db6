#include "perf/sim/network.h"

#include <algorithm>

#include "topology/graph.h"

namespace atl::sim {

namespace {
constexpr double kNvLinkPortGBs = topo::kNvLinkGBs * 18;  // one GPU's NVLinks to the NVSwitch, per direction
}  // namespace

double hostPortGBs(const topo::NodeSpec& node) {
  return node.intraGBs > 0 ? node.intraGBs : node.nvswitch ? kNvLinkPortGBs : node.nicGbps / 8;
}

uint32_t Network::addPair(double gbs) {
  capacity_.push_back(gbs);
  capacity_.push_back(gbs);
  return static_cast<uint32_t>(capacity_.size() - 2);
}

Network::Network(const topo::ClusterSpec& spec) : spec_(spec) {
  const int nodes = std::max(1, spec.nodes);
  for (int n = 0; n < nodes; ++n) place_.push_back(topo::placeNode(spec, n));
  // Every unit counts as full, the last ones too: the switches are sized for the spec.
  const int nodesPerLeaf = std::max(1, spec.nodesPerLeaf);
  const int nodesPerIsland = nodesPerLeaf * std::max(1, spec.leavesPerIsland);
  build(std::vector<int>(static_cast<size_t>(place_.back().leaf + 1), nodesPerLeaf),
        std::vector<int>(static_cast<size_t>(place_.back().island + 1), nodesPerIsland),
        std::vector<int>(static_cast<size_t>(place_.back().group + 1), nodesPerIsland * std::max(1, spec.islandsPerGroup)));
}

Network::Network(const topo::ClusterSpec& spec, std::vector<topo::NodePlacement> placements)
    : spec_(spec), place_(std::move(placements)) {
  if (place_.empty()) place_.push_back(topo::NodePlacement{});
  spec_.nodes = static_cast<int>(place_.size());
  std::vector<int> leaves, islands, groups;
  auto count = [](std::vector<int>& per, int unit) {
    if (per.size() <= static_cast<size_t>(unit)) per.resize(static_cast<size_t>(unit) + 1, 0);
    ++per[static_cast<size_t>(unit)];
  };
  for (const topo::NodePlacement& p : place_) {
    count(leaves, p.leaf);
    count(islands, p.island);
    count(groups, p.group);
  }
  build(leaves, islands, groups);
}

void Network::build(const std::vector<int>& hostsPerLeaf, const std::vector<int>& hostsPerIsland,
                    const std::vector<int>& hostsPerGroup) {
  const topo::ClusterSpec& spec = spec_;
  const int nodes = static_cast<int>(place_.size());
  perNode_ = std::max(1, spec.node.gpus);
  rails_ = std::max(1, spec.node.nics);
  gpus_ = nodes * perNode_;
  dragonfly_ = spec.islandsPerGroup > 0;
  groups_ = static_cast<int>(hostsPerGroup.size());
  const double nicGBs = spec.node.nicGbps / 8;
  // Link ids come in blocks, each an (out, in) pair per unit, in this order.
  nvlink_ = static_cast<uint32_t>(capacity_.size());
  for (int g = 0; g < gpus_; ++g) addPair(hostPortGBs(spec.node));
  nic_ = static_cast<uint32_t>(capacity_.size());
  for (int i = 0; i < nodes * rails_; ++i) addPair(nicGBs);
  // A rail's leaf reaches the spine with its hosts' NIC bandwidth over the island's oversubscription.
  leafUp_ = static_cast<uint32_t>(capacity_.size());
  for (int hosts : hostsPerLeaf)
    for (int r = 0; r < rails_; ++r) addPair(nicGBs * hosts / spec.islandOversub);
  const double hostGBs = nicGBs * rails_;
  islandUp_ = static_cast<uint32_t>(capacity_.size());
  if (dragonfly_) {
    // Dragonfly+: an island's uplink into its group, then each group's global bandwidth split
    // evenly over links to every other group.
    for (int hosts : hostsPerIsland) addPair(hostGBs * hosts / spec.groupOversub);
    global_ = static_cast<uint32_t>(capacity_.size());
    for (int from = 0; from < groups_; ++from) {
      const double groupGBs = hostGBs * hostsPerGroup[static_cast<size_t>(from)] / spec.globalOversub;
      for (int to = 0; to < groups_; ++to) capacity_.push_back(groups_ > 1 ? groupGBs / (groups_ - 1) : groupGBs);
    }
  } else {
    // Fat-tree: islands meet in a non-blocking core through their oversubscribed uplinks.
    for (int hosts : hostsPerIsland) addPair(hostGBs * hosts / spec.globalOversub);
  }
}

topo::IslandMap Network::islandMap() const {
  topo::IslandMap m;
  m.islandOf.resize(static_cast<size_t>(gpus_));
  m.members.resize(static_cast<size_t>(place_.back().island + 1));
  for (int g = 0; g < gpus_; ++g) {
    const int island = place_[static_cast<size_t>(g / perNode_)].island;
    m.islandOf[static_cast<size_t>(g)] = island;
    m.members[static_cast<size_t>(island)].push_back(g);
  }
  return m;
}

int Network::railOf(int gpu) const { return (gpu % perNode_) * rails_ / perNode_; }

int Network::level(int a, int b) const {
  const int na = a / perNode_, nb = b / perNode_;
  if (na == nb) return 0;
  const topo::NodePlacement& pa = place_[static_cast<size_t>(na)];
  const topo::NodePlacement& pb = place_[static_cast<size_t>(nb)];
  if (pa.leaf == pb.leaf && railOf(a) == railOf(b)) return 1;
  if (pa.island == pb.island) return 2;
  if (dragonfly_ && pa.group == pb.group) return 3;
  return 4;
}

void Network::route(int a, int b, std::vector<uint32_t>* links) const {
  if (a == b) return;
  const int na = a / perNode_, nb = b / perNode_;
  if (na == nb) {
    links->push_back(nvlink_ + 2 * static_cast<uint32_t>(a));
    links->push_back(nvlink_ + 2 * static_cast<uint32_t>(b) + 1);
    return;
  }
  // A GPU's traffic leaves on its rail's NIC and arrives on the peer's; rails meet only above the
  // leaves.
  const int ra = railOf(a), rb = railOf(b);
  const topo::NodePlacement& pa = place_[static_cast<size_t>(na)];
  const topo::NodePlacement& pb = place_[static_cast<size_t>(nb)];
  links->push_back(nic_ + 2 * static_cast<uint32_t>(na * rails_ + ra));
  if (level(a, b) > 1) {
    links->push_back(leafUp_ + 2 * static_cast<uint32_t>(pa.leaf * rails_ + ra));
    if (pa.island != pb.island) {
      links->push_back(islandUp_ + 2 * static_cast<uint32_t>(pa.island));
      if (dragonfly_ && pa.group != pb.group)
        links->push_back(global_ + static_cast<uint32_t>(pa.group * groups_ + pb.group));
      links->push_back(islandUp_ + 2 * static_cast<uint32_t>(pb.island) + 1);
    }
    links->push_back(leafUp_ + 2 * static_cast<uint32_t>(pb.leaf * rails_ + rb) + 1);
  }
  links->push_back(nic_ + 2 * static_cast<uint32_t>(nb * rails_ + rb) + 1);
}

double Network::latencyUs(int a, int b) const {
  switch (level(a, b)) {
    case 0: return a == b ? 0 : kHostLatUs;
    case 1: return spec_.leafLatUs;
    case 2: return spec_.islandLatUs;
    case 3: return spec_.groupLatUs;
    default: return spec_.globalLatUs;
  }
}

topo::ClusterSpec specFromFabric(const topo::Fabric& fabric, topo::ClusterSpec base) {
  const int rails = std::max(1, base.node.nics);
  const topo::LevelSpec& leaf = fabric.level(topo::Level::Leaf);
  if (leaf.set) {
    base.node.nicGbps = leaf.bwGBs * 8 / rails;
    base.leafLatUs = leaf.latUs;
  }
  const double hostGBs = base.node.nicGbps / 8 * rails;
  auto take = [&](topo::Level l, double* latUs, double* oversub) {
    const topo::LevelSpec& spec = fabric.level(l);
    if (!spec.set) return;
    *latUs = spec.latUs;
    *oversub = hostGBs / spec.effectiveGBs();
  };
  take(topo::Level::Island, &base.islandLatUs, &base.islandOversub);
  take(topo::Level::Group, &base.groupLatUs, &base.groupOversub);
  take(topo::Level::Global, &base.globalLatUs, &base.globalOversub);
  base.islandsPerGroup = fabric.level(topo::Level::Group).set ? 1 : 0;
  base.nodes = static_cast<int>(fabric.hosts.size());
  return base;
}

}  // namespace atl::sim
