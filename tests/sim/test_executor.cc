// perf/sim/executor.h on the engine's own schedules: exact times where they can be worked out by
// hand, the sanity checks at small scale, and contention that shows where it should.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <vector>

#include "algorithms/schedule.h"
#include "perf/sim/executor.h"
#include "tests/sim/sanitized.h"

namespace algo = atl::algo;
using atl::sim::CostParams;
using atl::sim::Network;
using atl::sim::SimResult;

namespace {

// `nodes` hosts of one GPU and one 400 Gb/s NIC each.
atl::topo::ClusterSpec onePerNode(int nodes, int nodesPerLeaf, double globalOversub = 1) {
  atl::topo::ClusterSpec s;
  s.nodes = nodes;
  s.node.gpus = 1;
  s.node.nics = 1;
  s.nodesPerLeaf = nodesPerLeaf;
  s.leavesPerIsland = 1;
  s.globalOversub = globalOversub;
  return s;
}

// Every rank's compressed programs for `base` (its nranks and rank are filled in).
std::vector<std::vector<atl::sim::CompressedProgram>> programsFor(const Network& net, algo::CollSpec base) {
  std::vector<std::vector<atl::sim::CompressedProgram>> programs;
  base.nranks = net.gpus();
  for (int r = 0; r < net.gpus(); ++r) {
    base.rank = r;
    programs.push_back(atl::sim::compress(algo::buildSchedule(base)));
  }
  return programs;
}

SimResult run(const Network& net, algo::Coll coll, algo::Algo a, size_t count, const CostParams& cost = {},
              int channels = 1) {
  algo::CollSpec s;
  s.coll = coll;
  s.count = count;
  s.nchannels = channels;
  s.chunkElems = 1 << 20;
  s.algo = a;
  return atl::sim::simulate(net, programsFor(net, s), cost);
}

double busbwGBs(double bytes, int n, double us) { return bytes * 2.0 * (n - 1) / n / (us * 1e3); }

}  // namespace

TEST(SimExecutor, TwoRanksAcrossALeafTakeExactlyBytesOverBandwidthPlusLatency) {
  const Network net(onePerNode(2, 2));
  const size_t count = 1 << 24;  // 64 MiB of floats
  CostParams cost;
  cost.stepOverheadUs = 2;
  const SimResult r = run(net, algo::Coll::AllReduce, algo::Algo::Ring, count, cost);
  ASSERT_TRUE(r.complete);
  // Two steps (reduce-scatter, all-gather) of half the buffer each, both directions at once.
  const double step = 2 + (count * 4 / 2) / (50.0 * 1e3) + atl::topo::ClusterSpec{}.leafLatUs;
  EXPECT_NEAR(r.timeUs, 2 * step, 1e-6 * r.timeUs);
  EXPECT_EQ(r.flows, 4u);
}

TEST(SimExecutor, ARingOnOneNonBlockingIslandRunsAtLinkBandwidth) {
  const Network net(onePerNode(16, 16));
  const size_t count = size_t{1} << 26;  // 256 MiB
  const SimResult r = run(net, algo::Coll::AllReduce, algo::Algo::Ring, count);
  ASSERT_TRUE(r.complete);
  EXPECT_NEAR(busbwGBs(count * 4.0, 16, r.timeUs), 50.0, 0.02 * 50.0);
}

TEST(SimExecutor, TreeLatencyGrowsWithLog2OfTheRanks) {
  CostParams cost;
  cost.stepOverheadUs = 3;
  std::vector<double> t;
  for (int n : {8, 16, 32, 64}) {
    const Network net(onePerNode(n, n));
    const SimResult r = run(net, algo::Coll::AllReduce, algo::Algo::Tree, 2, cost);
    ASSERT_TRUE(r.complete);
    t.push_back(r.timeUs);
  }
  // Each doubling adds about one level up and one down: equal increments, unlike a ring's.
  for (size_t i = 1; i < t.size(); ++i) EXPECT_GT(t[i], t[i - 1]);
  const double first = t[1] - t[0], last = t[3] - t[2];
  EXPECT_NEAR(last, first, 0.35 * first) << t[0] << " " << t[1] << " " << t[2] << " " << t[3];
  std::printf("tree, 8 B: %.1f %.1f %.1f %.1f us at 8..64 ranks\n", t[0], t[1], t[2], t[3]);
}

TEST(SimExecutor, AnOversubscribedCoreSlowsTrafficBetweenIslandsOnly) {
  // 2 islands of 4 hosts. Inside an island the core does not matter; an all-to-all across it does.
  const Network fast(onePerNode(8, 4, 1)), slow(onePerNode(8, 4, 4));
  const size_t count = 1 << 20;
  const SimResult a = run(fast, algo::Coll::AlltoAll, algo::Algo::Direct, count);
  const SimResult b = run(slow, algo::Coll::AlltoAll, algo::Algo::Direct, count);
  ASSERT_TRUE(a.complete && b.complete);
  EXPECT_GT(b.timeUs, 1.5 * a.timeUs);
  std::printf("all-to-all across a 1:1 core %.1f us, 4:1 %.1f us\n", a.timeUs, b.timeUs);
}

TEST(SimExecutor, AReceiveNobodySendsIsReportedNotHidden) {
  const Network net(onePerNode(2, 2));
  std::vector<std::vector<atl::sim::CompressedProgram>> programs(2);
  atl::sim::CompressedProgram waits;
  atl::sim::StepShape recv;
  recv.recvPeer = 1;
  recv.recvCount = 16;
  waits.runs.push_back({recv, 1});
  programs[0].push_back(waits);
  const SimResult r = atl::sim::simulate(net, programs, {});
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.programsDone, 0u);
}

namespace {

// 4 hosts of 8 GPUs and 4 NICs per island, 2 islands, a 4:1 core: NVLink, rails, leaves and the
// core all in play, and islands for the hierarchical schedule.
atl::topo::ClusterSpec twoIslands() {
  atl::topo::ClusterSpec s;
  s.nodes = 8;
  s.nodesPerLeaf = 2;
  s.leavesPerIsland = 2;
  s.globalOversub = 4;
  return s;
}

SimResult runWithIslands(const Network& net, algo::Algo a, size_t count, const CostParams& cost, int channels) {
  algo::CollSpec s;
  s.count = count;
  s.nchannels = channels;
  s.chunkElems = 1 << 15;
  s.algo = a;
  s.islands = std::make_shared<const atl::topo::IslandMap>(net.islandMap());
  return atl::sim::simulate(net, programsFor(net, s), cost);
}

}  // namespace

// Fast-forward may only skip what would have repeated: every algorithm, size and cost setting
// gives the time of the step-by-step simulation, and the same step and flow counts.
TEST(SimExecutor, FastForwardGivesTheStepByStepResult) {
  const Network net(twoIslands());
  int jumped = 0;
  for (algo::Algo a : {algo::Algo::Ring, algo::Algo::Hierarchical, algo::Algo::Tree, algo::Algo::RecursiveHalvingDoubling})
    for (size_t count : {size_t{1} << 12, size_t{1} << 22})
      for (int channels : {1, 2}) {
        CostParams cost;
        cost.stepOverheadUs = 3;
        cost.reduceGBs = 200;
        cost.fastForward = false;
        const SimResult slow = runWithIslands(net, a, count, cost, channels);
        cost.fastForward = true;
        const SimResult fast = runWithIslands(net, a, count, cost, channels);
        ASSERT_TRUE(slow.complete && fast.complete) << algo::algoName(a);
        EXPECT_EQ(slow.jumps, 0u);
        EXPECT_NEAR(fast.timeUs, slow.timeUs, 1e-6 * slow.timeUs) << algo::algoName(a) << " " << count << " " << channels;
        EXPECT_EQ(fast.steps, slow.steps);
        EXPECT_EQ(fast.flows, slow.flows);
        jumped += fast.jumps > 0;
      }
  // The large rings and hierarchical runs repeat long enough to be skipped.
  EXPECT_GE(jumped, 4);
}

TEST(SimExecutor, AFlatRingOfThousandsSkipsAlmostEveryStep) {
  if (kSanitized) GTEST_SKIP() << "2048 simulated ranks: release builds only";
  atl::topo::ClusterSpec spec;
  spec.nodes = 256;
  spec.nodesPerLeaf = 16;
  spec.leavesPerIsland = 4;
  const Network net(spec);
  CostParams cost;
  cost.stepOverheadUs = 3;
  const SimResult r = runWithIslands(net, algo::Algo::Ring, size_t{1} << 28, cost, 1);
  ASSERT_TRUE(r.complete);
  EXPECT_EQ(r.steps, 2u * 2047 * 2048);
  EXPECT_GT(r.stepsSkipped, r.steps * 9 / 10);
  // Bounded by the NICs (50 GB/s) and, at 512 KiB per step, by the step overhead.
  EXPECT_LT(busbwGBs((size_t{1} << 28) * 4.0, 2048, r.timeUs), 50.0);
}

TEST(SimExecutor, AStepBudgetAbandonsTheSimulationAndSaysSo) {
  const Network net(twoIslands());
  CostParams cost;
  cost.fastForward = false;
  cost.maxSimulatedSteps = 100;
  const SimResult r = runWithIslands(net, algo::Algo::Ring, 1 << 20, cost, 1);
  EXPECT_TRUE(r.aborted);
  EXPECT_FALSE(r.complete);
}
