// perf/sim/generate.h: relabelling stands in for the generator only where it gives what the
// generator would; every rank of small clusters is compared with its own full build.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "algorithms/schedule.h"
#include "perf/sim/generate.h"
#include "perf/sim/network.h"

namespace algo = atl::algo;
using atl::sim::CompressedProgram;

namespace {

algo::CollSpec spec(algo::Algo a, const atl::sim::Network& net, size_t count) {
  algo::CollSpec s;
  s.nranks = net.gpus();
  s.count = count;
  s.nchannels = 2;
  s.chunkElems = 1 << 12;
  s.algo = a;
  s.islands = std::make_shared<const atl::topo::IslandMap>(net.islandMap());
  return s;
}

// 3 islands of 2 hosts of 4 GPUs: 24 ranks, so count 1e6 splits unevenly everywhere.
atl::sim::Network cluster() {
  atl::topo::ClusterSpec c;
  c.nodes = 6;
  c.node.gpus = 4;
  c.node.nics = 2;
  c.nodesPerLeaf = 2;
  c.leavesPerIsland = 1;
  return atl::sim::Network(c);
}

void expectEveryRankAsBuilt(const algo::CollSpec& base, const atl::sim::Generated& g) {
  ASSERT_EQ(g.programs.size(), static_cast<size_t>(base.nranks));
  for (int r = 0; r < base.nranks; ++r) {
    algo::CollSpec s = base;
    s.rank = r;
    const std::vector<CompressedProgram> own = atl::sim::compress(algo::buildSchedule(s));
    ASSERT_EQ(own.size(), g.programs[static_cast<size_t>(r)].size()) << r;
    for (size_t p = 0; p < own.size(); ++p)
      EXPECT_TRUE(atl::sim::equivalent(own[p], g.programs[static_cast<size_t>(r)][p])) << "rank " << r << " program " << p;
  }
}

}  // namespace

TEST(SimGenerate, AFlatRingIsBuiltOnceAndRelabelled) {
  const atl::sim::Network net = cluster();
  const algo::CollSpec s = spec(algo::Algo::Ring, net, 1000000);
  const atl::sim::Generated g = atl::sim::generatePrograms(s, {1, 4, 8});
  EXPECT_EQ(g.period, 1);
  EXPECT_LT(g.built, net.gpus());
  expectEveryRankAsBuilt(s, g);
}

TEST(SimGenerate, HierarchicalRepeatsPerIslandOrHost) {
  const atl::sim::Network net = cluster();
  const algo::CollSpec s = spec(algo::Algo::Hierarchical, net, 1000000);
  const atl::sim::Generated g = atl::sim::generatePrograms(s, {1, 4, 8});
  EXPECT_GT(g.period, 1);
  EXPECT_LE(g.period, 8);
  expectEveryRankAsBuilt(s, g);
}

TEST(SimGenerate, ATreeIsNotSymmetricSoEveryRankIsBuilt) {
  const atl::sim::Network net = cluster();
  const algo::CollSpec s = spec(algo::Algo::Tree, net, 100000);
  const atl::sim::Generated g = atl::sim::generatePrograms(s, {1, 4, 8});
  EXPECT_EQ(g.period, net.gpus());
  expectEveryRankAsBuilt(s, g);
}
