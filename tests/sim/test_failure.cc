// perf/sim/failure.h: a rank failing mid-collective, with the engine's detection parameters read
// from the registry as the engine reads them, and the notice spread's own constants.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>

#include "base/params.h"
#include "core/fault_notice.h"
#include "perf/sim/failure.h"
#include "tests/common/saved_env.h"
#include "tuning/selector.h"

namespace algo = atl::algo;
namespace sim = atl::sim;

namespace {

constexpr size_t kBytes = 16 << 20;

struct World {
  std::unique_ptr<sim::Network> net;
  sim::Setup setup;
  explicit World(int nodes) {
    atl::topo::ClusterSpec spec;
    spec.nodes = nodes;
    spec.node.gpus = 4;
    spec.node.nics = 4;
    spec.nodesPerLeaf = nodes;
    spec.leavesPerIsland = 1;
    net = std::make_unique<sim::Network>(spec);
    setup.net = net.get();
    setup.cost.stepOverheadUs = atl::tuning::modelParams().stepOverheadUs;
  }
  double cleanUs() const { return sim::simulateCollective(setup, algo::Coll::AllReduce, algo::Algo::Ring, kBytes).result.timeUs; }
  sim::FailureReport fail(sim::FailureParams f) const {
    return sim::simulateFailure(setup, algo::Coll::AllReduce, algo::Algo::Ring, kBytes, f);
  }
};

/// Sets engine variables for one test and makes the registry read them; puts both back after.
class EngineParams {
 public:
  EngineParams(const char* name, const char* value) {
    env_.save({name});
    setenv(name, value, 1);
    atl::params::reloadForTesting();
  }
  ~EngineParams() {
    env_.restore();
    atl::params::reloadForTesting();
  }

 private:
  atl::test::SavedEnv env_;
};

TEST(SimFailure, AKillIsSeenByItsNeighboursThenSpreadsOneHopPerLink) {
  for (int nodes : {4, 16}) {
    const World w(nodes);
    const int n = nodes * 4;
    sim::FailureParams f = sim::FailureParams::fromRegistry();
    f.rank = 5;
    f.atUs = 0.1 * w.cleanUs();
    const sim::FailureReport r = w.fail(f);
    ASSERT_TRUE(r.skipped.empty()) << r.skipped;
    EXPECT_EQ(r.failed, std::vector<int>{5});
    EXPECT_EQ(r.survivors, n - 1);
    EXPECT_EQ(r.stalled, n - 1) << "early in a ring all-reduce nobody can finish without rank 5";
    EXPECT_EQ(r.unresolved, 0);
    // Rank 5's ring neighbours see its sockets close, then wait for its notice, which never comes.
    const double seen = std::min(w.net->latencyUs(5, 4), w.net->latencyUs(5, 6)) + f.detectUs +
                        static_cast<double>(atl::fault::kNoticeWaitMs) * 1e3;
    EXPECT_NEAR(r.firstErrorUs - f.atUs, seen, 1e-3);
    // Both ways round the ring from rank 5's neighbours: the farthest survivor is (n - 2) / 2 hops
    // away, each hop its predecessor's notice to its other neighbour, then the break.
    EXPECT_EQ(r.maxHops, (n - 2) / 2);
    const double hop = f.bootMsgUs + f.detectUs;
    EXPECT_GT(r.lastErrorUs - r.firstErrorUs, r.maxHops * hop);
    EXPECT_LT(r.lastErrorUs - r.firstErrorUs, r.maxHops * (2 * f.bootMsgUs + f.detectUs + 10));
    // Shrink: log2 rounds of all-gather and barrier over the n - 1 survivors.
    const int rounds = static_cast<int>(std::ceil(std::log2(n - 1)));
    EXPECT_DOUBLE_EQ(r.barrierUs, rounds * f.bootMsgUs);
    EXPECT_GT(r.allGatherUs, rounds * f.bootMsgUs);
    // The id down a binomial tree: far from one rank sending to each of the others in turn.
    EXPECT_LE(r.idUs, rounds * rounds * f.bootMsgUs);
    EXPECT_GT(r.recoveredUs(), r.lastErrorUs);
  }
}

TEST(SimFailure, AVanishedHostIsFoundAfterTheHeartbeatTimeout) {
  EngineParams p("ATOLL_HEARTBEAT_TIMEOUT_MS", "3000");
  const World w(4);
  sim::FailureParams f = sim::FailureParams::fromRegistry();
  EXPECT_EQ(f.heartbeatTimeoutMs, 3000);
  f.mode = sim::FailureMode::Vanish;
  f.rank = 5;
  f.atUs = 0.1 * w.cleanUs();
  const sim::FailureReport r = w.fail(f);
  ASSERT_TRUE(r.skipped.empty()) << r.skipped;
  EXPECT_EQ(r.failed, (std::vector<int>{4, 5, 6, 7})) << "the whole host goes";
  EXPECT_EQ(r.survivors, 12);
  EXPECT_NEAR(r.firstErrorUs - f.atUs, (3000 + atl::fault::kNoticeWaitMs) * 1e3, 1e-3);
  EXPECT_LT(r.lastErrorUs - f.atUs, (3000 + atl::fault::kNoticeWaitMs + 10) * 1e3);
}

TEST(SimFailure, AHungRankIsFoundOnlyByTheTimeout) {
  EngineParams p("ATOLL_TIMEOUT_MS", "2000");
  const World w(4);
  sim::FailureParams f = sim::FailureParams::fromRegistry();
  EXPECT_EQ(f.timeoutMs, 2000);
  EXPECT_EQ(f.chainWaitMs, static_cast<double>(atl::fault::chainWaitMs()));
  f.mode = sim::FailureMode::Hang;
  f.rank = 5;
  const double clean = w.cleanUs();
  f.atUs = 0.1 * clean;
  const sim::FailureReport r = w.fail(f);
  ASSERT_TRUE(r.skipped.empty()) << r.skipped;
  EXPECT_EQ(r.failed, std::vector<int>{5});
  // Every survivor stalls within the collective's own time of the failure, then waits out the
  // timeout and the chain.
  const double wait = (f.timeoutMs + f.chainWaitMs) * 1e3;
  EXPECT_GE(r.firstErrorUs, wait);
  EXPECT_LE(r.firstErrorUs - f.atUs, wait + clean);
  EXPECT_LE(r.lastErrorUs - f.atUs, wait + clean + 10e3);
}

TEST(SimFailure, BadRankIsRefused) {
  const World w(1);
  sim::FailureParams f = sim::FailureParams::fromRegistry();
  f.rank = 4;
  EXPECT_FALSE(w.fail(f).skipped.empty());
}

}  // namespace
