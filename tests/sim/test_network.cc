// perf/sim/network.h: which links a transfer crosses at each level of a synthetic cluster, their
// capacities, and that a 100k-GPU cluster is cheap to describe.
#include <gtest/gtest.h>

#include <vector>

#include "perf/sim/network.h"

using atl::sim::Network;

namespace {

// 8 nodes x 8 GPUs, 4 rails of 400 Gb/s, 2 nodes per leaf, 2 leaves per island: 2 islands.
atl::topo::ClusterSpec fatTree(double globalOversub) {
  atl::topo::ClusterSpec s;
  s.nodes = 8;
  s.nodesPerLeaf = 2;
  s.leavesPerIsland = 2;
  s.globalOversub = globalOversub;
  return s;
}

std::vector<uint32_t> route(const Network& n, int a, int b) {
  std::vector<uint32_t> links;
  n.route(a, b, &links);
  return links;
}

double bottleneck(const Network& n, int a, int b) {
  double bw = 1e30;
  for (uint32_t l : route(n, a, b)) bw = std::min(bw, n.capacity()[l]);
  return bw;
}

}  // namespace

TEST(SimNetwork, EachLevelCrossesTheLinksItShould) {
  const Network n(fatTree(4));
  EXPECT_EQ(n.gpus(), 64);
  EXPECT_TRUE(route(n, 3, 3).empty());
  EXPECT_EQ(route(n, 0, 7).size(), 2u);  // NVLink out and in
  EXPECT_EQ(n.level(0, 7), 0);
  EXPECT_DOUBLE_EQ(bottleneck(n, 0, 7), 450.0);
  // GPU 0 and GPU 8 (next node, same leaf, same rail): NIC out, NIC in.
  EXPECT_EQ(n.level(0, 8), 1);
  EXPECT_EQ(route(n, 0, 8).size(), 2u);
  EXPECT_DOUBLE_EQ(bottleneck(n, 0, 8), 50.0);
  // Other rail on the next node: up to the spine and down the other rail's leaf.
  EXPECT_EQ(n.railOf(2), 1);
  EXPECT_EQ(n.level(0, 10), 2);
  EXPECT_EQ(route(n, 0, 10).size(), 4u);
  // Another island: the islands' uplinks too, oversubscribed 4:1 (4 nodes x 4 rails x 50 / 4).
  EXPECT_EQ(n.level(0, 32), 4);
  const std::vector<uint32_t> far = route(n, 0, 32);
  EXPECT_EQ(far.size(), 6u);
  EXPECT_DOUBLE_EQ(n.capacity()[far[2]], 200.0);
  EXPECT_DOUBLE_EQ(n.latencyUs(0, 32), atl::topo::ClusterSpec{}.globalLatUs);
  // Directions are separate links: a -> b and b -> a share none.
  for (uint32_t x : route(n, 0, 32))
    for (uint32_t y : route(n, 32, 0)) EXPECT_NE(x, y);
}

TEST(SimNetwork, DragonflyGroupsShareOneGlobalLinkPerPair) {
  atl::topo::ClusterSpec s = fatTree(2);
  s.nodes = 16;                         // 4 islands
  s.islandsPerGroup = 1;                // each its own group: 4 groups
  const Network n(s);
  const std::vector<uint32_t> a = route(n, 0, 32), b = route(n, 1, 33), c = route(n, 0, 64);
  ASSERT_EQ(a.size(), 7u);
  EXPECT_EQ(a[3], b[3]);   // groups 0 -> 1: one global link
  EXPECT_NE(a[3], c[3]);   // groups 0 -> 2: another
  // A group's global bandwidth (16 hosts' worth over 2:1) split over its 3 peers.
  EXPECT_DOUBLE_EQ(n.capacity()[a[3]], 4 * 4 * 50.0 / 2 / 3);
  EXPECT_EQ(n.level(0, 32), 4);
}

TEST(SimNetwork, AHundredThousandGpusHoldOnlyPerNodeLinks) {
  atl::topo::ClusterSpec s;
  s.nodes = 12500;
  s.nodesPerLeaf = 32;
  s.leavesPerIsland = 8;
  const Network n(s);
  EXPECT_EQ(n.gpus(), 100000);
  EXPECT_LT(n.capacity().size(), 400000u);
  EXPECT_EQ(route(n, 0, 99999).size(), 6u);
}
