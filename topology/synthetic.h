// Synthetic clusters for tests and simulation: N nodes x G GPUs with rails, leaf/spine with
// oversubscription, Dragonfly+ groups of islands. Deterministic: the same spec gives the same result.
#pragma once

#include <vector>

#include "base/status.h"
#include "topology/fabric.h"
#include "topology/graph.h"
#include "topology/islands.h"

namespace atl::topo {

struct NodeSpec {
  int sockets = 2;
  int gpus = 8;
  int nics = 4;          // rails; GPU g shares a PCI switch with NIC g * nics / gpus
  bool nvswitch = true;  // all GPUs on one NVSwitch fabric; false: no NVLink
  double nicGbps = 400;  // per NIC
  double intraGBs = 0;   // GPU to GPU inside the host (per GPU, each way); 0: NVLink, or the NIC without NVSwitch
};

struct ClusterSpec {
  int nodes = 2;
  NodeSpec node;
  int nodesPerLeaf = 16;    // hosts under one leaf (per rail)
  int leavesPerIsland = 1;  // leaves joined by one spine layer = an island (pod)
  int islandsPerGroup = 0;  // Dragonfly+: islands per group; 0 = no group level
  double leafLatUs = 1.5, islandLatUs = 2.5, groupLatUs = 4, globalLatUs = 8;
  double islandOversub = 1, groupOversub = 2, globalOversub = 4;
};

struct Cluster {
  std::vector<RankDesc> ranks;     // node-major: rank = node * gpus + gpu
  Fabric fabric;                   // hosts node0000..., leaves, islands, groups
  IslandMap islands;               // from the fabric (as ATOLL_FABRIC_FILE would give)
  std::vector<int> groupOfIsland;  // Dragonfly+ group of each island
  FabricLevels levels;
};

/// Where host `node` sits: its leaf, island (pod) and Dragonfly+ group (0 without groups).
struct NodePlacement {
  int leaf = 0, island = 0, group = 0;
};
NodePlacement placeNode(const ClusterSpec& spec, int node);

/// One host: sockets (CPU + NUMA), a PCI switch per GPU pair with its rail NIC, optional NVSwitch.
/// `prefix` is prepended to every node id so several hosts can share one graph.
Graph syntheticNode(const NodeSpec& spec, const std::string& prefix = "");
/// Several hosts in one graph: rail NICs into leaf switches, leaves into a spine per island,
/// spines joined per group and across groups (Dragonfly+). Meant for a handful of nodes.
Graph syntheticClusterGraph(const ClusterSpec& spec);
/// Descriptors, fabric and islands for any size (no graph: cheap for thousands of ranks).
Result<Cluster> syntheticCluster(const ClusterSpec& spec);
/// The cluster a fabric file describes (ATOLL_FABRIC_FILE, docs/TOPOLOGY.md): its hosts in file
/// order, each with `node`'s GPUs and NICs. `placements` (optional) gets each host's leaf, island
/// and group, numbered in order of first appearance.
Result<Cluster> fabricCluster(const NodeSpec& node, Fabric fabric, std::vector<NodePlacement>* placements);

}  // namespace atl::topo
