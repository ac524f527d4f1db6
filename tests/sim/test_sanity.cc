// Issue 15's sanity check of atoll-sim at the scale it is about: hierarchical against the flat ring
// at 32k GPUs. (The ring at link bandwidth and the tree's log2 latency are in test_executor.cc.)
#include <gtest/gtest.h>

#include <cstdio>
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

}  // namespace

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
