// atoll-sim --fabric: a cluster read from an ATOLL_FABRIC_FILE (topo::fabricCluster,
// sim::specFromFabric, the placement-based Network). A synthetic cluster written out as a fabric
// file and read back must simulate exactly as the generator's; an irregular file (units of
// different sizes) must size each uplink by its own hosts.
#include <gtest/gtest.h>

#include <vector>

#include "perf/sim/network.h"
#include "topology/fabric.h"
#include "topology/synthetic.h"

using atl::sim::Network;
namespace topo = atl::topo;

namespace {

struct FromFile {
  topo::Cluster cluster;
  std::vector<topo::NodePlacement> place;
  topo::ClusterSpec spec;
};

FromFile readBack(const std::string& text, const topo::NodeSpec& node) {
  FromFile f;
  auto fabric = topo::parseFabric(text);
  EXPECT_TRUE(fabric.ok()) << atl::lastErrorMessage();
  auto cluster = topo::fabricCluster(node, *fabric, &f.place);
  EXPECT_TRUE(cluster.ok()) << atl::lastErrorMessage();
  f.cluster = std::move(*cluster);
  topo::ClusterSpec base;
  base.node = node;
  f.spec = atl::sim::specFromFabric(f.cluster.fabric, base);
  return f;
}

void expectSameNetwork(const Network& a, const Network& b) {
  ASSERT_EQ(a.gpus(), b.gpus());
  ASSERT_EQ(a.capacity().size(), b.capacity().size());
  for (size_t i = 0; i < a.capacity().size(); ++i) EXPECT_NEAR(a.capacity()[i], b.capacity()[i], 1e-9) << "link " << i;
  for (int x = 0; x < a.gpus(); ++x) {
    for (int y = 0; y < a.gpus(); ++y) {
      std::vector<uint32_t> ra, rb;
      a.route(x, y, &ra);
      b.route(x, y, &rb);
      EXPECT_EQ(ra, rb) << x << " -> " << y;
      EXPECT_EQ(a.level(x, y), b.level(x, y)) << x << " -> " << y;
      EXPECT_DOUBLE_EQ(a.latencyUs(x, y), b.latencyUs(x, y)) << x << " -> " << y;
    }
  }
  EXPECT_EQ(a.islandMap().members, b.islandMap().members);
}

topo::ClusterSpec small(int islandsPerGroup) {
  topo::ClusterSpec s;
  s.nodes = 8;
  s.node.gpus = 2;
  s.node.nics = 2;
  s.nodesPerLeaf = 2;
  s.leavesPerIsland = islandsPerGroup > 0 ? 1 : 2;
  s.islandsPerGroup = islandsPerGroup;
  s.islandOversub = 2;
  s.groupOversub = 3;
  s.globalOversub = 4;
  s.leafLatUs = 1.25;
  s.islandLatUs = 2.5;
  s.groupLatUs = 5;
  s.globalLatUs = 10;
  return s;
}

}  // namespace

TEST(SimFabric, AFatTreeWrittenAsAFabricFileSimulatesAsTheGenerator) {
  const topo::ClusterSpec spec = small(0);
  auto synthetic = topo::syntheticCluster(spec);
  ASSERT_TRUE(synthetic.ok());
  const FromFile f = readBack(topo::formatFabric(synthetic->fabric), spec.node);
  EXPECT_EQ(f.spec.islandsPerGroup, 0);
  EXPECT_DOUBLE_EQ(f.spec.islandOversub, 2);
  EXPECT_DOUBLE_EQ(f.spec.globalOversub, 4);
  expectSameNetwork(Network(spec), Network(f.spec, f.place));
  EXPECT_EQ(f.cluster.islands.members, synthetic->islands.members);
}

TEST(SimFabric, ADragonflyWrittenAsAFabricFileSimulatesAsTheGenerator) {
  const topo::ClusterSpec spec = small(2);  // 4 islands of 2 hosts, 2 groups
  auto synthetic = topo::syntheticCluster(spec);
  ASSERT_TRUE(synthetic.ok());
  const FromFile f = readBack(topo::formatFabric(synthetic->fabric), spec.node);
  EXPECT_EQ(f.spec.islandsPerGroup, 1);
  EXPECT_DOUBLE_EQ(f.spec.groupOversub, 3);
  expectSameNetwork(Network(spec), Network(f.spec, f.place));
  EXPECT_EQ(f.cluster.groupOfIsland, synthetic->groupOfIsland);
}

TEST(SimFabric, UnevenUnitsSizeEachUplinkByItsOwnHosts) {
  // Island p0: leaf a (2 hosts) and leaf b (1 host); island p1: leaf c (1 host). One GPU and one
  // 50 GB/s NIC per host; island traffic over 2:1, global at 25 GB/s per host (2:1 of the NIC).
  const FromFile f = readBack(
      "level leaf bw=50 lat=1\n"
      "level island bw=50 lat=2 oversub=2\n"
      "level global bw=25 lat=5\n"
      "leaf a island=p0 hosts=h1,h2\n"
      "leaf b island=p0 hosts=h3\n"
      "leaf c island=p1 hosts=h4\n",
      topo::NodeSpec{.sockets = 1, .gpus = 1, .nics = 1, .nvswitch = false, .nicGbps = 100, .intraGBs = 0});
  ASSERT_EQ(f.place.size(), 4u);
  EXPECT_EQ(f.place[2].leaf, 1);
  EXPECT_EQ(f.place[3].island, 1);
  EXPECT_DOUBLE_EQ(f.spec.node.nicGbps, 400);  // the file's 50 GB/s per host, on one rail
  const Network n(f.spec, f.place);
  EXPECT_EQ(n.gpus(), 4);
  auto capacities = [&](int a, int b) {
    std::vector<uint32_t> links;
    n.route(a, b, &links);
    std::vector<double> gbs;
    for (uint32_t l : links) gbs.push_back(n.capacity()[l]);
    return gbs;
  };
  // h1 -> h2: one leaf. h1 -> h3: through leaf a's uplink (2 hosts / 2) and leaf b's (1 host / 2).
  EXPECT_EQ(capacities(0, 1), (std::vector<double>{50, 50}));
  EXPECT_EQ(capacities(0, 2), (std::vector<double>{50, 50, 25, 50}));
  // h1 -> h4: up leaf a, out of island p0 (3 hosts x 50 / 2), into p1 (1 host x 50 / 2), down leaf c.
  EXPECT_EQ(capacities(0, 3), (std::vector<double>{50, 50, 75, 25, 25, 50}));
  EXPECT_DOUBLE_EQ(n.latencyUs(0, 1), 1);
  EXPECT_DOUBLE_EQ(n.latencyUs(0, 2), 2);
  EXPECT_DOUBLE_EQ(n.latencyUs(0, 3), 5);
  EXPECT_EQ(n.islandMap().members, (std::vector<std::vector<int>>{{0, 1, 2}, {3}}));
}

TEST(SimFabric, AnEmptyOrMissingFileIsAClearError) {
  auto empty = topo::fabricCluster(topo::NodeSpec{}, topo::Fabric{}, nullptr);
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(atl::lastErrorMessage().find("no hosts"), std::string::npos) << atl::lastErrorMessage();
  auto missing = topo::readFabricFile("/nonexistent/atoll.fabric");
  EXPECT_FALSE(missing.ok());
}
