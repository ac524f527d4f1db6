// Issue 15's sanity checks of atoll-sim at the scale they are about: the selector against the
// simulated best, and hierarchical against the flat ring at 32k GPUs. (The ring at link bandwidth
// and the tree's log2 latency are in test_executor.cc.)
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <memory>

#include "perf/sim/sweep.h"
#include "tests/sim/sanitized.h"
#include "topology/synthetic.h"
#include "tuning/selector.h"

namespace algo = atl::algo;
namespace tuning = atl::tuning;

namespace {

struct World {
  atl::topo::ClusterSpec spec;
  std::unique_ptr<atl::sim::Network> net;
  atl::sim::Setup setup;
  explicit World(const atl::topo::ClusterSpec& s, int channels) : spec(s), net(std::make_unique<atl::sim::Network>(s)) {
    setup.net = net.get();
    setup.islands = std::make_shared<const atl::topo::IslandMap>(net->islandMap());
    setup.nchannels = channels;
    setup.cost.stepOverheadUs = tuning::modelParams().stepOverheadUs;
  }
};

tuning::Selector selectorFor(const World& w, int channels) {
  auto cluster = atl::topo::syntheticCluster(w.spec);
  EXPECT_TRUE(cluster.ok());
  auto s = atl::sim::clusterSelector(w.spec, *cluster, channels);
  EXPECT_TRUE(s.ok());
  return std::move(s).value();
}

void expectPickWithinTenPercent(const atl::topo::ClusterSpec& spec, int channels) {
  if (kSanitized) GTEST_SKIP() << "hundreds of simulated ranks per size: release builds only";
  World w(spec, channels);
  const tuning::Selector sel = selectorFor(w, channels);
  // Up to 256 MiB: above it the picks stay the same (ring or hierarchical), and a gigabyte tree of
  // 256 unsymmetric ranks would take most of the test's time to simulate.
  for (size_t bytes = 4096; bytes <= (size_t{256} << 20); bytes *= 4) {
    double best = std::numeric_limits<double>::infinity(), picked = 0;
    const algo::Algo pick = sel.choose(algo::Coll::AllReduce, bytes).algo;
    for (int i = 0; i < algo::kNumAlgos; ++i) {
      const auto a = static_cast<algo::Algo>(i);
      tuning::SelectInput in = sel.input();
      in.bytes = bytes;
      if (!tuning::applicable(a, in)) continue;
      const atl::sim::Point p = atl::sim::simulateCollective(w.setup, algo::Coll::AllReduce, a, bytes);
      if (!p.simulated) continue;
      ASSERT_TRUE(p.result.complete) << algo::algoName(a) << " " << bytes;
      best = std::min(best, p.result.timeUs);
      if (a == pick) picked = p.result.timeUs;
    }
    ASSERT_GT(picked, 0) << "the pick " << algo::algoName(pick) << " was not simulated at " << bytes;
    EXPECT_LE(picked, 1.10 * best) << "at " << bytes << " B the selector picks " << algo::algoName(pick);
  }
}

// The cost model's estimate of one algorithm against its simulated time, within `tolerance`.
void expectModelWithin(const atl::topo::ClusterSpec& spec, int channels, algo::Algo a, size_t bytes, double tolerance) {
  if (kSanitized) GTEST_SKIP() << "hundreds of simulated ranks: release builds only";
  World w(spec, channels);
  const tuning::Selector sel = selectorFor(w, channels);
  tuning::SelectInput in = sel.input();
  in.bytes = bytes;
  const double model = tuning::estimateUs(a, in);
  const atl::sim::Point p = atl::sim::simulateCollective(w.setup, algo::Coll::AllReduce, a, bytes);
  ASSERT_TRUE(p.simulated && p.result.complete) << p.skipped;
  EXPECT_NEAR(model / p.result.timeUs, 1.0, tolerance)
      << algo::algoName(a) << " at " << bytes << " B: model " << model << " us, simulated " << p.result.timeUs << " us";
}

// 64 hosts x 8 GPUs, 8 islands in 4 Dragonfly+ groups.
atl::topo::ClusterSpec dragonfly() {
  atl::topo::ClusterSpec s;  // the group level's 2:1 and the global level's 4:1 are the defaults
  s.nodes = 64;
  s.nodesPerLeaf = 4;
  s.leavesPerIsland = 2;
  s.islandsPerGroup = 2;
  return s;
}

}  // namespace

TEST(SimSanity, SelectorPicksWithinTenPercentOfTheBestOnOneIsland) {
  atl::topo::ClusterSpec s;  // 16 hosts x 8 GPUs under one leaf
  s.nodes = 16;
  s.nodesPerLeaf = 16;
  s.leavesPerIsland = 1;
  expectPickWithinTenPercent(s, 1);
}

TEST(SimSanity, SelectorPicksWithinTenPercentOfTheBestAcrossIslands) {
  atl::topo::ClusterSpec s;  // 4 islands of 8 hosts x 8 GPUs, 2:1 core
  s.nodes = 32;
  s.nodesPerLeaf = 8;
  s.leavesPerIsland = 1;
  s.globalOversub = 2;
  expectPickWithinTenPercent(s, 2);
}

// 4096 hosts x 8 GPUs in 32 islands; between islands a quarter of the bandwidth inside them.
TEST(SimSanity, HierarchicalBeatsTheFlatRingAt32kGpus) {
  if (kSanitized) GTEST_SKIP() << "a 32k-GPU simulation: release builds only";
  atl::topo::ClusterSpec s;
  s.nodes = 4096;
  s.nodesPerLeaf = 16;
  s.leavesPerIsland = 8;
  s.globalOversub = 4;
  World w(s, 1);
  const size_t bytes = size_t{4} << 30;
  const atl::sim::Point ring = atl::sim::simulateCollective(w.setup, algo::Coll::AllReduce, algo::Algo::Ring, bytes);
  const atl::sim::Point hier = atl::sim::simulateCollective(w.setup, algo::Coll::AllReduce, algo::Algo::Hierarchical, bytes);
  ASSERT_TRUE(ring.simulated && ring.result.complete) << ring.skipped;
  ASSERT_TRUE(hier.simulated && hier.result.complete) << hier.skipped;
  EXPECT_LT(hier.result.timeUs, ring.result.timeUs);
  std::printf("32768 GPUs, 4 GiB: ring %.0f us, hierarchical %.0f us (%.2fx); simulated in %.1f + %.1f s\n",
              ring.result.timeUs, hier.result.timeUs, ring.result.timeUs / hier.result.timeUs,
              ring.genSeconds + ring.simSeconds, hier.genSeconds + hier.simSeconds);
}

// Halving/doubling's first steps send every group's traffic to one other group, over one direct
// link: the model used to price them on the whole global bandwidth, 2.5x under the simulated time
// at 16 MiB.
TEST(SimSanity, TheModelPricesHalvingDoublingOnDragonflyWithinTenPercent) {
  expectModelWithin(dragonfly(), 1, algo::Algo::RecursiveHalvingDoubling, size_t{16} << 20, 0.10);
}

// A tree level passes a chunk on after both children's: with one transfer per level the model was
// 14% under the simulated tree at 1 MiB on 128 hosts in 8 islands.
TEST(SimSanity, TheModelPricesTheTreeWithinTenPercent) {
  atl::topo::ClusterSpec s;
  s.nodes = 128;
  s.nodesPerLeaf = 16;
  s.leavesPerIsland = 1;
  s.globalOversub = 4;
  expectModelWithin(s, 1, algo::Algo::Tree, size_t{1} << 20, 0.10);
}

TEST(SimSanity, SelectorPicksWithinTenPercentOfTheBestOnDragonfly) { expectPickWithinTenPercent(dragonfly(), 1); }
