// The links atoll-sim shares among flows, for a synthetic cluster (topology/synthetic.h): each
// GPU's NVLink port to its node's NVSwitch, each rail NIC, each leaf's uplinks to its island's
// spine, and above the islands either one non-blocking core (fat-tree: only each island's uplink,
// oversubscribed, limits) or Dragonfly+ groups joined pairwise by global links (minimal routing:
// traffic between two groups shares their one link). Links are directional, so a ring's
// send and receive on one port do not compete. Routes are computed, not stored: a 100k-GPU
// cluster holds O(nodes) links and no per-pair table.
#pragma once

#include <cstdint>
#include <vector>

#include "topology/island_map.h"
#include "topology/synthetic.h"

namespace atl::sim {

/// Between two GPUs of one host: each GPU's link, each way (--intra-gbs, else its NVLinks to the
/// NVSwitch, else its NIC), and the latency.
double hostPortGBs(const topo::NodeSpec& node);
inline constexpr double kHostLatUs = 0.7;

class Network {
 public:
  explicit Network(const topo::ClusterSpec& spec);
  /// Hosts placed as a fabric file places them (topo::fabricCluster): units may differ in size,
  /// and each uplink carries its own hosts' bandwidth over its level's oversubscription. The
  /// spec gives the hosts' shape, the levels' latencies and oversubscriptions, and Dragonfly+ when
  /// islandsPerGroup > 0 (the group count then comes from the placements).
  Network(const topo::ClusterSpec& spec, std::vector<topo::NodePlacement> placements);

  int gpus() const { return gpus_; }
  /// Every link's capacity in GB/s, indexed by the ids routes use.
  const std::vector<double>& capacity() const { return capacity_; }
  /// Appends the links a transfer from GPU (rank) a to b crosses; none for a == b.
  void route(int a, int b, std::vector<uint32_t>* links) const;
  /// One-way latency from a to b in microseconds: the sum of the levels it crosses.
  double latencyUs(int a, int b) const;
  /// The level a and b meet at: 0 same node, 1 one leaf switch (same leaf and rail), 2 island,
  /// 3 group, 4 global.
  int level(int a, int b) const;
  /// The rail NIC GPU `gpu` sends on: g * rails / gpus-per-node, as synthetic nodes place them.
  int railOf(int gpu) const;
  int gpusPerNode() const { return perNode_; }
  /// Which island (pod) each GPU is in, as the engine's generators take it.
  topo::IslandMap islandMap() const;
  const topo::ClusterSpec& spec() const { return spec_; }

 private:
  uint32_t addPair(double gbs);  // an out and an in link; returns the out id (in = out + 1)
  /// Makes the links once place_ is set; hostsPer* give how many hosts each leaf, island and group
  /// holds, as the uplinks' capacities count them.
  void build(const std::vector<int>& hostsPerLeaf, const std::vector<int>& hostsPerIsland,
             const std::vector<int>& hostsPerGroup);

  topo::ClusterSpec spec_;
  int gpus_ = 0, perNode_ = 1, rails_ = 1, groups_ = 1;
  bool dragonfly_ = false;
  std::vector<topo::NodePlacement> place_;  // per node
  std::vector<double> capacity_;
  uint32_t nvlink_ = 0, nic_ = 0, leafUp_ = 0, islandUp_ = 0, groupUp_ = 0, global_ = 0;
};

/// `base` with what a fabric file says (ATOLL_FABRIC_FILE): the leaf level's bandwidth per host
/// becomes the NICs' (split over base.node.nics rails), each level's latency its own, and each
/// level's bandwidth and oversubscription one oversubscription of the NICs' bandwidth (the model's
/// uplinks carry their hosts' NIC bandwidth over it). Dragonfly+ (islandsPerGroup 1) when the file
/// sets the group level (a file without it is a fat-tree above its islands, as our synthetic ones
/// are). Levels the file leaves out keep base's.
topo::ClusterSpec specFromFabric(const topo::Fabric& fabric, topo::ClusterSpec base);

}  // namespace atl::sim
