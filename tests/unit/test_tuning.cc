// Algorithm selection: NCCL_ALGO/NCCL_PROTO parsing, the cost model's choices on synthetic island
// layouts, environment overrides, the TUNING table, and the NCCL tuner plugin ABI.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/debug.h"
#include "base/params.h"
#include "core/comm.h"
#include "core/comm_topology.h"
#include "tuning/algo_env.h"
#include "tuning/selector.h"
#include "tuning/tuner_plugin.h"

namespace atl::tuning {
namespace {

using algo::Algo;
using algo::Coll;

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name)) old_ = old, hadOld_ = true;
    setenv(name, value, 1);
    params::reloadForTesting();
  }
  ~ScopedEnv() {
    if (hadOld_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
    params::reloadForTesting();
  }

 private:
  const char* name_;
  std::string old_;
  bool hadOld_ = false;
};

constexpr uint32_t bit(Algo a) { return 1u << static_cast<int>(a); }
uint32_t mask(const AlgoFilter& f, Coll c) { return f.allowed[static_cast<int>(c)]; }

// ---- NCCL_ALGO / NCCL_PROTO ------------------------------------------------------------------

TEST(AlgoSpec, EmptyAllowsEverything) {
  Parsed<AlgoFilter> p = parseAlgoSpec("");
  EXPECT_TRUE(p.valid);
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(mask(p.filter, Coll::AllReduce), AlgoFilter::kAll);
}

TEST(AlgoSpec, ListIsCaseInsensitive) {
  Parsed<AlgoFilter> p = parseAlgoSpec("Ring, TREE");
  ASSERT_TRUE(p.valid);
  EXPECT_TRUE(p.warnings.empty());
  for (int c = 0; c < kNumColls; ++c) EXPECT_EQ(p.filter.allowed[c], bit(Algo::Ring) | bit(Algo::Tree));
}

TEST(AlgoSpec, CaretExcludes) {
  Parsed<AlgoFilter> p = parseAlgoSpec("^tree,rd");
  ASSERT_TRUE(p.valid);
  EXPECT_EQ(mask(p.filter, Coll::AllReduce), AlgoFilter::kAll & ~(bit(Algo::Tree) | bit(Algo::RecursiveDoubling)));
  EXPECT_TRUE(p.filter.allows(Coll::Broadcast, Algo::Ring));
}

TEST(AlgoSpec, PerCollectiveSections) {
  Parsed<AlgoFilter> p = parseAlgoSpec("allreduce:tree,ring;broadcast:ring;reducescatter:^rhd;sendrecv:ring");
  ASSERT_TRUE(p.valid);
  EXPECT_EQ(mask(p.filter, Coll::AllReduce), bit(Algo::Tree) | bit(Algo::Ring));
  EXPECT_EQ(mask(p.filter, Coll::Broadcast), bit(Algo::Ring));
  EXPECT_EQ(mask(p.filter, Coll::ReduceScatter), AlgoFilter::kAll & ~bit(Algo::RecursiveHalvingDoubling));
  EXPECT_EQ(mask(p.filter, Coll::Reduce), AlgoFilter::kAll);  // not named: untouched
  EXPECT_EQ(mask(p.filter, Coll::AllGather), AlgoFilter::kAll);
}

TEST(AlgoSpec, OurNames) {
  Parsed<AlgoFilter> p = parseAlgoSpec("allreduce:rd,rhd,direct,hierarchical");
  ASSERT_TRUE(p.valid);
  EXPECT_EQ(mask(p.filter, Coll::AllReduce), bit(Algo::RecursiveDoubling) | bit(Algo::RecursiveHalvingDoubling) |
                                                 bit(Algo::Direct) | bit(Algo::Hierarchical));
}

TEST(AlgoSpec, LogDepthNames) {
  Parsed<AlgoFilter> p = parseAlgoSpec("broadcast:binomial;reduce:Binomial,ring;allgather:bruck");
  ASSERT_TRUE(p.valid);
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_EQ(mask(p.filter, Coll::Broadcast), bit(Algo::Binomial));
  EXPECT_EQ(mask(p.filter, Coll::Reduce), bit(Algo::Binomial) | bit(Algo::Ring));
  EXPECT_EQ(mask(p.filter, Coll::AllGather), bit(Algo::Bruck));
  // "tree" stays NCCL's all-reduce double binary tree: it does not select the binomial tree.
  EXPECT_EQ(mask(parseAlgoSpec("broadcast:tree").filter, Coll::Broadcast), bit(Algo::Tree));
}

TEST(AlgoSpec, NcclOnlyNamesWarnAndAreIgnored) {
  Parsed<AlgoFilter> p = parseAlgoSpec("ring,NVLS,CollnetDirect");
  ASSERT_TRUE(p.valid);
  EXPECT_EQ(p.warnings.size(), 2u);
  EXPECT_EQ(mask(p.filter, Coll::AllReduce), bit(Algo::Ring));
  // Only unavailable names: nothing would be left to run, so the section is dropped.
  Parsed<AlgoFilter> q = parseAlgoSpec("PAT");
  EXPECT_TRUE(q.valid);
  EXPECT_EQ(mask(q.filter, Coll::AllReduce), AlgoFilter::kAll);
  EXPECT_EQ(q.warnings.size(), 2u);
}

TEST(AlgoSpec, InvalidWarnsOnceAndIsIgnored) {
  for (const char* bad : {"bogus", "ring,,tree", "allreduc:ring", "allreduce:", "ring;broadcast:foo"}) {
    Parsed<AlgoFilter> p = parseAlgoSpec(bad);
    EXPECT_FALSE(p.valid) << bad;
    ASSERT_EQ(p.warnings.size(), 1u) << bad;
    EXPECT_NE(p.warnings[0].find("ring, tree, rd, rhd, direct, hierarchical"), std::string::npos) << p.warnings[0];
    EXPECT_EQ(mask(p.filter, Coll::AllReduce), AlgoFilter::kAll) << bad;
  }
}

TEST(AlgoSpec, ExcludingEverythingKeepsDefaults) {
  Parsed<AlgoFilter> p = parseAlgoSpec("allreduce:^ring,rd,tree,rhd,direct,hierarchical,binomial,bruck");
  EXPECT_TRUE(p.valid);
  EXPECT_EQ(p.warnings.size(), 1u);
  EXPECT_EQ(mask(p.filter, Coll::AllReduce), AlgoFilter::kAll);
}

TEST(ProtoSpec, SimpleAlwaysStays) {
  Parsed<ProtoFilter> p = parseProtoSpec("LL");
  EXPECT_TRUE(p.valid);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("Simple"), std::string::npos);
  EXPECT_TRUE(p.filter.allows(Coll::AllReduce, Proto::Simple));
  EXPECT_TRUE(p.filter.allows(Coll::AllReduce, Proto::LL));
  EXPECT_FALSE(p.filter.allows(Coll::AllReduce, Proto::LL128));

  Parsed<ProtoFilter> q = parseProtoSpec("^ll128");
  EXPECT_TRUE(q.warnings.empty());
  EXPECT_FALSE(q.filter.allows(Coll::Broadcast, Proto::LL128));
  EXPECT_TRUE(parseProtoSpec("allreduce:simple;broadcast:LL,Simple").warnings.empty());
  EXPECT_EQ(parseProtoSpec("^simple").warnings.size(), 1u);
}

TEST(ProtoSpec, Invalid) {
  Parsed<ProtoFilter> p = parseProtoSpec("fast");
  EXPECT_FALSE(p.valid);
  ASSERT_EQ(p.warnings.size(), 1u);
  EXPECT_NE(p.warnings[0].find("LL, LL128, Simple"), std::string::npos);
}

TEST(AlgoEnv, ReadsAndIgnoresInvalid) {
  {
    ScopedEnv e("NCCL_ALGO", "allreduce:tree");
    EXPECT_EQ(mask(envAlgoFilter(), Coll::AllReduce), bit(Algo::Tree));
  }
  {
    ScopedEnv e("NCCL_ALGO", "not-an-algo");
    EXPECT_EQ(mask(envAlgoFilter(), Coll::AllReduce), AlgoFilter::kAll);
  }
  EXPECT_EQ(mask(envAlgoFilter(), Coll::AllReduce), AlgoFilter::kAll);
}

// ---- the selector on synthetic clusters --------------------------------------------------------

topo::IslandMap islands(int count, int size) {
  topo::IslandMap m;
  m.members.resize(count);
  for (int r = 0; r < count * size; ++r) {
    m.islandOf.push_back(r / size);
    m.members[r / size].push_back(r);
  }
  return m;
}

// Islands on shm, joined by links 10x thinner (and socket latency).
FabricParams thinInterIsland() {
  FabricParams f = FabricParams::defaults();
  f.inter = {f.model.shm.bwGBs / 10, f.model.socket.latUs};
  return f;
}

Selector makeSelector(int count, int size, int maxChannels = 2) {
  topo::IslandMap m = islands(count, size);
  Result<Selector> s = Selector::create(count * size, count > 1 ? &m : nullptr, thinInterIsland(), maxChannels);
  EXPECT_TRUE(s.ok());
  return std::move(s).value();
}

constexpr size_t kSmall = 8;
constexpr size_t kLarge = size_t{64} << 20;

/// The cost model's input for an all-reduce of `bytes` over `count` islands of `size` ranks.
SelectInput allReduceInput(int count, int size, size_t bytes) {
  SelectInput in = makeSelector(count, size).input();
  in.coll = Coll::AllReduce;
  in.bytes = bytes;
  return in;
}

bool latencyAlgo(Algo a) { return a == Algo::RecursiveDoubling || a == Algo::Tree || a == Algo::Direct; }

TEST(Selector, TwoIslandsSmallAndLarge) {
  Selector s = makeSelector(2, 8);
  EXPECT_EQ(s.input().nIslands, 2);
  EXPECT_EQ(s.input().maxIslandSize, 8);
  Choice small = s.choose(Coll::AllReduce, kSmall);
  EXPECT_TRUE(latencyAlgo(small.algo)) << algo::algoName(small.algo);
  EXPECT_EQ(small.nchannels, 1);
  Choice large = s.choose(Coll::AllReduce, kLarge);
  EXPECT_EQ(large.algo, Algo::Hierarchical) << s.table(Coll::AllReduce, kLarge);
  EXPECT_EQ(large.nchannels, 2);
  EXPECT_GT(large.estUs, small.estUs);
}

TEST(Selector, SixtyFourIslands) {
  Selector s = makeSelector(64, 8);
  EXPECT_TRUE(latencyAlgo(s.choose(Coll::AllReduce, kSmall).algo)) << s.table(Coll::AllReduce, kSmall);
  EXPECT_EQ(s.choose(Coll::AllReduce, kLarge).algo, Algo::Hierarchical) << s.table(Coll::AllReduce, kLarge);
}

TEST(Selector, ModelDecidesSmallSizesWithoutTheRdRule) {
  ScopedEnv e("ATOLL_RD_MAX_BYTES", "0");
  for (auto [count, size] : {std::pair{2, 8}, std::pair{64, 8}}) {
    Selector s = makeSelector(count, size);
    Choice c = s.choose(Coll::AllReduce, kSmall);
    EXPECT_TRUE(latencyAlgo(c.algo)) << s.table(Coll::AllReduce, kSmall);
    EXPECT_EQ(s.choose(Coll::AllReduce, kLarge).algo, Algo::Hierarchical);
  }
}

TEST(Selector, OneIslandKeepsTodaysChoices) {
  Selector s = makeSelector(1, 8);
  EXPECT_EQ(s.choose(Coll::AllReduce, kSmall).algo, Algo::RecursiveDoubling);  // ATOLL_RD_MAX_BYTES
  EXPECT_EQ(s.choose(Coll::AllReduce, kLarge).algo, Algo::Ring) << s.table(Coll::AllReduce, kLarge);
  Selector two = makeSelector(1, 2);
  EXPECT_EQ(two.choose(Coll::AllReduce, kSmall).algo, Algo::RecursiveDoubling);
}

// Above ATOLL_HOST_RD_MAX_BYTES on an island inside one host, rd and direct are out: they fold the
// whole buffer at every step (at np=2 on shared memory rd took 1.4-1.6x rhd's time from 64 KiB to
// 256 KiB), which the model's terms price within a few percent of the ring. At np=2 the defaults
// price direct below both, so without the exclusion it would win there.
TEST(Selector, AboveTheHostRdRuleOnlyAlgorithmsThatFoldEachByteOnce) {
  ScopedEnv e("ATOLL_HOST_RD_MAX_BYTES", "32768");
  ScopedEnv other("ATOLL_RD_MAX_BYTES", "0");  // the rule of islands that span hosts plays no part here
  for (int size : {2, 4, 8}) {
    Selector s = makeSelector(1, size);
    EXPECT_EQ(s.choose(Coll::AllReduce, 32768).algo, Algo::RecursiveDoubling) << size;
    for (size_t bytes : {size_t{32769}, size_t{65536}, size_t{256} << 10}) {
      const Algo a = s.choose(Coll::AllReduce, bytes).algo;
      EXPECT_TRUE(a == Algo::Ring || a == Algo::RecursiveHalvingDoubling || a == Algo::Tree)
          << size << " ranks, " << bytes << " bytes:\n"
          << s.table(Coll::AllReduce, bytes);
    }
  }
  const std::string t = makeSelector(1, 2).table(Coll::AllReduce, 65536);
  for (const char* name : {"\n  rd ", "\n  direct "}) {
    const size_t line = t.find(name);
    ASSERT_NE(line, std::string::npos) << t;
    EXPECT_NE(t.substr(line, t.find('\n', line + 1) - line).find("above ATOLL_HOST_RD_MAX_BYTES"), std::string::npos)
        << t;
  }
  EXPECT_NE(makeSelector(1, 2).table(Coll::AllReduce, 4096).find("chosen (ATOLL_HOST_RD_MAX_BYTES)"),
            std::string::npos);
  {
    // NCCL_ALGO's word stands: with rd (or direct) alone allowed, that is what runs.
    ScopedEnv only("NCCL_ALGO", "allreduce:rd");
    EXPECT_EQ(makeSelector(1, 2).choose(Coll::AllReduce, 65536).algo, Algo::RecursiveDoubling);
  }
  {
    ScopedEnv only("NCCL_ALGO", "allreduce:direct");
    EXPECT_EQ(makeSelector(1, 2).choose(Coll::AllReduce, 65536).algo, Algo::Direct);
  }
}

// An island that spans hosts keeps ATOLL_RD_MAX_BYTES, and above it the model decides with rd
// among the candidates: between hosts the wire hides the fold, and rd's log2 n steps pay further up.
TEST(Selector, IslandsAcrossHostsKeepTheRdRuleAndRd) {
  ScopedEnv e("ATOLL_RD_MAX_BYTES", "262144");
  ScopedEnv host("ATOLL_HOST_RD_MAX_BYTES", "0");
  FabricParams f = thinInterIsland();
  f.islandHosts = 16;
  f.hostRanks = 8;
  Result<Selector> s = Selector::create(128, nullptr, f, 1);
  ASSERT_TRUE(s.ok());
  Choice c = s->choose(Coll::AllReduce, 262144);
  EXPECT_EQ(c.algo, Algo::RecursiveDoubling);
  EXPECT_NE(s->table(Coll::AllReduce, 262144).find("chosen (ATOLL_RD_MAX_BYTES)"), std::string::npos);
  EXPECT_EQ(s->table(Coll::AllReduce, 1 << 20).find("above ATOLL_HOST_RD_MAX_BYTES"), std::string::npos)
      << s->table(Coll::AllReduce, 1 << 20);
}

TEST(Selector, RdOnlyForPowersOfTwo) {
  Selector s = makeSelector(2, 3);
  Choice c = s.choose(Coll::AllReduce, kSmall);
  EXPECT_NE(c.algo, Algo::RecursiveDoubling);
  const std::string t = s.table(Coll::AllReduce, kSmall);
  const size_t line = t.find("\n  rd ");
  ASSERT_NE(line, std::string::npos) << t;
  EXPECT_EQ(t.substr(line, t.find('\n', line + 1) - line).find("n/a") != std::string::npos, true) << t;
}

TEST(CostModel, SharedUplinksSlowOnlyAlgorithmsThatCrossTogether) {
  SelectInput in = allReduceInput(2, 8, kLarge);
  SelectInput shared = in;
  shared.interSharers = 8;
  // The ring crosses at one rank per island boundary at a time; hierarchical, rd and rhd at all.
  EXPECT_DOUBLE_EQ(estimateUs(Algo::Ring, shared), estimateUs(Algo::Ring, in));
  EXPECT_DOUBLE_EQ(estimateUs(Algo::Tree, shared), estimateUs(Algo::Tree, in));
  for (Algo a : {Algo::Hierarchical, Algo::RecursiveDoubling, Algo::RecursiveHalvingDoubling})
    EXPECT_GT(estimateUs(a, shared), 1.5 * estimateUs(a, in)) << algo::algoName(a);
  // Hierarchical's crossing ranks are at most the island size: more sharers change nothing.
  SelectInput more = shared;
  more.interSharers = 64;
  EXPECT_DOUBLE_EQ(estimateUs(Algo::Hierarchical, more), estimateUs(Algo::Hierarchical, shared));
}

TEST(CostModel, TheRingsLoneCrossingHasTheIslandsWholeUplink) {
  // perf/sim/validate.sh's emulated cluster: 2 islands of 2 hosts x 2 ranks, 1 Gbit/s NICs, a 2:1
  // core (a fabric file gives 1/16 GB/s per host). The ring's one flow per island boundary has the
  // island's whole uplink, the NIC's speed here; hierarchical's four crossing ranks share it.
  SelectInput in = allReduceInput(2, 4, kLarge);
  in.intraBwGBs = 0.125;
  in.interBwGBs = 0.0625;
  in.interSharers = in.intraSharers = 2;
  SelectInput pooled = in;
  pooled.islandHosts = 2;
  EXPECT_NEAR(estimateUs(Algo::Ring, pooled), estimateUs(Algo::Ring, in) / 2, estimateUs(Algo::Ring, in) * 0.01);
  EXPECT_GT(estimateUs(Algo::Ring, in), estimateUs(Algo::Hierarchical, in));  // what the selector used to pick
  EXPECT_LT(estimateUs(Algo::Ring, pooled), 0.8 * estimateUs(Algo::Hierarchical, pooled));  // measured 1.35-1.47x
  for (Algo a : {Algo::Hierarchical, Algo::RecursiveDoubling, Algo::RecursiveHalvingDoubling})
    EXPECT_DOUBLE_EQ(estimateUs(a, pooled), estimateUs(a, in)) << algo::algoName(a);
  // The pooled uplink is no faster than the NIC the flow leaves by.
  pooled.islandHosts = 64;
  SelectInput nicBound = pooled;
  nicBound.islandHosts = 2;
  EXPECT_DOUBLE_EQ(estimateUs(Algo::Ring, pooled), estimateUs(Algo::Ring, nicBound));
}

TEST(CostModel, HopsInsideHostsCostTheHostsLatency) {
  // 2 islands of 4 hosts x 8 ranks. A message goes around the ring through every hop in turn: 2
  // hops between islands, 6 between hosts of an island, 56 inside hosts.
  SelectInput in = allReduceInput(2, 32, 0);  // latency alone
  in.stepOverheadUs = 3;
  in.intraLatUs = 2;
  in.interLatUs = 10;
  in.hostLatUs = 0.5;
  SelectInput hosts = in;
  hosts.hostRanks = 8;
  const double n = 64;
  EXPECT_DOUBLE_EQ(estimateUs(Algo::Ring, in), 2 * (n - 1) * (3 + (2 * 10 + 62 * 2) / n));
  EXPECT_DOUBLE_EQ(estimateUs(Algo::Ring, hosts), 2 * (n - 1) * (3 + (2 * 10 + 6 * 2 + 56 * 0.5) / n));
  // Hierarchical's rings inside an island: 4 hops between hosts, 28 inside.
  EXPECT_NEAR(estimateUs(Algo::Hierarchical, in) - estimateUs(Algo::Hierarchical, hosts),
              2 * 31 * ((32 * 2 - (4 * 2 + 28 * 0.5)) / 32.0), 1e-9);
  // Recursive doubling's steps at distances 1, 2 and 4 stay inside hosts, as do halving/doubling's
  // last three steps; of the tree's levels, the two lowest (each once up and once down): edges at
  // distance 4 leave the host for half the nodes.
  EXPECT_NEAR(estimateUs(Algo::RecursiveDoubling, in) - estimateUs(Algo::RecursiveDoubling, hosts), 3 * (2 - 0.5), 1e-9);
  EXPECT_NEAR(estimateUs(Algo::RecursiveHalvingDoubling, in) - estimateUs(Algo::RecursiveHalvingDoubling, hosts),
              2 * 3 * (2 - 0.5), 1e-9);
  EXPECT_NEAR(estimateUs(Algo::Tree, in) - estimateUs(Algo::Tree, hosts), 2 * 2 * (2 - 0.5), 1e-9);
}

TEST(CostModel, DragonflyGroupsExchangeOverOneDirectLinkEach) {
  // 8 islands of 64 ranks (8 hosts x 8) in 4 Dragonfly+ groups: 50 GB/s of global bandwidth per
  // host, split over direct links to the 3 other groups; 100 GB/s per host between islands of a
  // group. Latency-free, so only the bandwidth terms differ.
  SelectInput flat = allReduceInput(8, 64, size_t{16} << 20);
  flat.stepOverheadUs = flat.intraLatUs = flat.interLatUs = flat.hostLatUs = 0;
  flat.intraBwGBs = 50;
  flat.interBwGBs = 50;
  flat.interSharers = 8;
  flat.islandHosts = 8;
  flat.rdBwPenalty = flat.rhdBwPenalty = 1;
  SelectInput df = flat;
  df.groups = 4;
  df.groupBwGBs = 100;
  df.groupLatUs = 0;
  const double s = static_cast<double>(flat.bytes), perByte = 8 / 50e3;  // a rank's share of 50 GB/s
  // Halving/doubling's first two steps (distances 256 and 128) cross between groups, each group
  // sending to one other over a third of its global bandwidth; the third crosses inside groups.
  EXPECT_NEAR(estimateUs(Algo::RecursiveHalvingDoubling, df) - estimateUs(Algo::RecursiveHalvingDoubling, flat),
              2 * s * perByte * (0.75 * 3 + 0.125 / 2 - 0.875), 1e-6);
  EXPECT_NEAR(estimateUs(Algo::RecursiveDoubling, df) - estimateUs(Algo::RecursiveDoubling, flat),
              s * perByte * (2 * 3 + 0.5 - 3), 1e-6);
  // Hierarchical's ring of islands puts one island per group on the next group's link: 8 hosts on
  // a link of 16 * 50 / 3 GB/s, 1.5 times a host's global share.
  const double shard = s / 64;
  EXPECT_NEAR(estimateUs(Algo::Hierarchical, df) - estimateUs(Algo::Hierarchical, flat),
              2 * 7 * shard / 8 * perByte * (1.5 - 1), 1e-6);
  // The ring's lone crossing flow is NIC-bound either way; the tree's edges cross one at a time.
  EXPECT_DOUBLE_EQ(estimateUs(Algo::Ring, df), estimateUs(Algo::Ring, flat));
  EXPECT_DOUBLE_EQ(estimateUs(Algo::Tree, df), estimateUs(Algo::Tree, flat));
  // Two groups have one link between them: all of their global bandwidth.
  SelectInput two = df;
  two.groups = 2;
  EXPECT_NEAR(estimateUs(Algo::RecursiveDoubling, two) - estimateUs(Algo::RecursiveDoubling, flat),
              s * perByte * (1 + 2 * 0.5 - 3), 1e-6);
}

TEST(CostModel, TreeNicLoadCountsBothTreesEdgesOutOfAHost) {
  // 4 hosts of 2 ranks, one NIC each (validate.sh's cluster): with both trees, host 1 (ranks 2, 3)
  // takes tree 0's edges from ranks 1 and 5 and tree 1's from rank 1, and sends three.
  EXPECT_EQ(treeNicChunks(8, 2, 2, 2), 3);
  EXPECT_EQ(treeNicChunks(8, 1, 2, 2), 2);
  // A rank per host, or 8 per host on 4 rails: an inner node's two children at most.
  EXPECT_EQ(treeNicChunks(16, 2, 1, 1), 2);
  EXPECT_EQ(treeNicChunks(1024, 2, 2, 8), 2);
  EXPECT_EQ(treeNicChunks(2, 1, 1, 1), 0);
  // The selector counts it only where islands span hosts, whose links are NICs.
  FabricParams f = FabricParams::defaults();
  f.islandHosts = 2;
  f.hostRanks = 2;
  f.intraSharers = 2;
  topo::IslandMap m = islands(2, 4);
  Result<Selector> spanning = Selector::create(8, &m, f, 2);
  ASSERT_TRUE(spanning.ok());
  EXPECT_EQ(spanning->input().treeNicLoad, 3);
  f.islandHosts = 1;
  Result<Selector> onHosts = Selector::create(8, &m, f, 2);
  ASSERT_TRUE(onHosts.ok());
  EXPECT_EQ(onHosts->input().treeNicLoad, 0);
  // Three chunks through the NIC instead of two: the pipelined term grows by half.
  SelectInput in = spanning->input();
  in.coll = Coll::AllReduce;
  in.bytes = size_t{64} << 20;
  in.stepOverheadUs = in.intraLatUs = in.interLatUs = in.hostLatUs = 0;
  in.intraBwGBs = 0.125;
  in.interBwGBs = 0.0625;
  in.treeBwPenalty = 1;
  SelectInput two = in;
  two.treeNicLoad = 2;
  const double s = static_cast<double>(in.bytes);
  EXPECT_NEAR(estimateUs(Algo::Tree, in) - estimateUs(Algo::Tree, two), 2.0 / 2 * s * (3 - 2) / 125.0, 1e-6);
}

TEST(CostModel, ATreeLevelWaitsForBothChildrensChunks) {
  // One island of 16 ranks, one tree, one chunk: each of the 4 levels moves two chunks up and two
  // down, then the pipelined term (an inner node's port takes both children's chunks per phase).
  SelectInput in = allReduceInput(1, 16, size_t{1} << 20);
  in.maxChannels = 1;
  in.chunkBytes = 0;
  in.stepOverheadUs = in.intraLatUs = 0;
  in.intraBwGBs = 1;  // 1e3 bytes per us
  in.treeBwPenalty = 1;
  const double s = static_cast<double>(in.bytes) / 1e3;
  EXPECT_NEAR(estimateUs(Algo::Tree, in), 2 * 4 * 2 * s + 4 * s, 1e-6);
}

TEST(LinkChoice, AFabricFilePricesIslandsThatSpanHostsByItsOwnLevels) {
  // validate.sh's emulated cluster: hosts h0-h3 with 2 ranks each, islands {h0,h1} and {h2,h3},
  // 1 Gbit/s per host inside islands, a 2:1 core between them.
  std::vector<topo::RankDesc> ranks(8);
  for (size_t r = 0; r < ranks.size(); ++r) {
    ranks[r].hostHash = 0x100 + r / 2;
    topo::setHostName(&ranks[r], "h" + std::to_string(r / 2));
    ranks[r].nics = 1;
  }
  topo::CommPlacement placement;
  auto map = std::make_shared<topo::IslandMap>(islands(2, 4));
  placement.islands = map;
  placement.rule = topo::IslandRule::Fabric;
  placement.fromFabricFile = true;
  placement.levels = topo::fabricLevels(ranks, *map, nullptr);
  placement.levels.intraBwGBs = 0.12;
  placement.levels.intraLatUs = 20;
  placement.levels.interBwGBs = 0.06;
  placement.levels.interLatUs = 40;
  ASSERT_EQ(placement.levels.islandHosts, 2);
  const LinkChoice c = chooseLinks(ranks, placement);
  EXPECT_FALSE(c.intraShm);
  EXPECT_DOUBLE_EQ(c.fabric.intra.bwGBs, 0.12);  // the fabric's, not the socket model's
  EXPECT_DOUBLE_EQ(c.fabric.intraSharers, 2);
  EXPECT_DOUBLE_EQ(c.fabric.interSharers, 2);
  EXPECT_EQ(c.fabric.islandHosts, 2);
  EXPECT_EQ(c.fabric.hostRanks, 2);
  EXPECT_DOUBLE_EQ(c.fabric.host.latUs, c.fabric.model.shm.latUs);
  auto sel = Selector::create(8, map.get(), c.fabric, 2);
  ASSERT_TRUE(sel.ok());
  // Measured there: the ring 1.35-1.47x faster than hierarchical at 4-32 MiB.
  for (size_t bytes : {size_t{4} << 20, size_t{32} << 20})
    EXPECT_EQ(sel->choose(Coll::AllReduce, bytes).algo, Algo::Ring) << sel->table(Coll::AllReduce, bytes);
  EXPECT_EQ(sel->input().treeNicLoad, 3);  // both trees' edges out of a 2-rank host
  // A fabric whose islands sit in different Dragonfly+ groups hands its groups to the model.
  placement.levels.groups = 2;
  placement.levels.groupBwGBs = 0.1;
  placement.levels.groupLatUs = 30;
  const LinkChoice g = chooseLinks(ranks, placement);
  EXPECT_EQ(g.fabric.groups, 2);
  EXPECT_DOUBLE_EQ(g.fabric.group.bwGBs, 0.1);
  EXPECT_DOUBLE_EQ(g.fabric.group.latUs, 30);
}

TEST(Selector, OtherCollectivesAcrossIslands) {
  Selector s = makeSelector(2, 8);
  // Fewer blocks over the thin links: hierarchical all-gather and reduce-scatter at every size.
  for (Coll c : {Coll::AllGather, Coll::ReduceScatter}) {
    EXPECT_EQ(s.choose(c, kSmall * 16).algo, Algo::Hierarchical) << s.table(c, kSmall * 16);
    EXPECT_EQ(s.choose(c, kLarge).algo, Algo::Hierarchical) << s.table(c, kLarge);
  }
  // Broadcast and reduce: the two-level chain's latency wins small; the ring's single stream
  // over the thin link wins large (a leader sends every chunk twice).
  for (Coll c : {Coll::Broadcast, Coll::Reduce}) {
    EXPECT_EQ(s.choose(c, kSmall).algo, Algo::Hierarchical) << s.table(c, kSmall);
    EXPECT_EQ(s.choose(c, kLarge).algo, Algo::Ring) << s.table(c, kLarge);
  }
  for (Coll c : {Coll::AlltoAll, Coll::Gather, Coll::Scatter}) {
    EXPECT_EQ(s.choose(c, kSmall).algo, Algo::Ring);
    EXPECT_EQ(s.choose(c, kLarge).algo, Algo::Ring);
    EXPECT_NE(s.table(c, kLarge).find("hierarchical  n/a"), std::string::npos) << s.table(c, kLarge);
  }
  // One island: the log-depth algorithms win small, the ring (or chain) large; reduce-scatter has
  // only the ring.
  Selector one = makeSelector(1, 8);
  EXPECT_EQ(one.choose(Coll::Broadcast, kSmall).algo, Algo::Binomial) << one.table(Coll::Broadcast, kSmall);
  EXPECT_EQ(one.choose(Coll::Reduce, kSmall).algo, Algo::Binomial);
  EXPECT_EQ(one.choose(Coll::AllGather, kSmall).algo, Algo::Bruck) << one.table(Coll::AllGather, kSmall);
  EXPECT_EQ(one.choose(Coll::ReduceScatter, kSmall).algo, Algo::Ring);
  for (Coll c : {Coll::Broadcast, Coll::Reduce, Coll::AllGather, Coll::ReduceScatter}) {
    EXPECT_EQ(one.choose(c, kLarge).algo, Algo::Ring) << one.table(c, kLarge);
    EXPECT_GT(one.choose(c, kLarge).estUs, 0);
  }
}

// Ranks on one host (no island map): the binomial tree and Bruck for small messages, more so the
// more ranks; the chain and the ring once the tree's root would send a large buffer log2(n) times.
TEST(Selector, LogDepthAtManyRanks) {
  for (int n : {8, 64, 128, 1024}) {
    Selector s = makeSelector(1, n);
    for (Coll c : {Coll::Broadcast, Coll::Reduce}) {
      EXPECT_EQ(s.choose(c, kSmall).algo, Algo::Binomial) << s.table(c, kSmall);
      EXPECT_EQ(s.choose(c, size_t{16} << 20).algo, Algo::Ring) << s.table(c, size_t{16} << 20);
      EXPECT_EQ(s.choose(c, kLarge).algo, Algo::Ring) << s.table(c, kLarge);
    }
    // All-gather prices the whole output: 8 bytes from every rank.
    const size_t gathered = kSmall * static_cast<size_t>(n);
    EXPECT_EQ(s.choose(Coll::AllGather, gathered).algo, Algo::Bruck) << s.table(Coll::AllGather, gathered);
    EXPECT_EQ(s.choose(Coll::AllGather, size_t{16} << 20).algo, Algo::Ring) << s.table(Coll::AllGather, size_t{16} << 20);
    EXPECT_EQ(s.choose(Coll::AllGather, kLarge).algo, Algo::Ring);
    if (n >= 64) {
      // Where the chain's n-1 hops dominate, the tree still wins at 64 KiB.
      EXPECT_EQ(s.choose(Coll::Broadcast, size_t{64} << 10).algo, Algo::Binomial) << s.table(Coll::Broadcast, 64 << 10);
      EXPECT_EQ(s.choose(Coll::AllGather, size_t{64} << 10).algo, Algo::Bruck);
    }
  }
}

TEST(CostModel, LogDepthFormulas) {
  SelectInput in = makeSelector(1, 64).input();
  in.coll = Coll::Broadcast;
  in.bytes = 1000;
  in.chunkBytes = 0;
  const double a = in.stepOverheadUs + in.intraLatUs, b = 1.0 / (in.intraBwGBs * 1e3);
  // Unpipelined binomial: ceil(log2 n) hops of the whole buffer.
  EXPECT_NEAR(estimateUs(Algo::Binomial, in), 6 * (a + 1000 * b), 1e-9);
  in.nranks = 65;
  EXPECT_NEAR(estimateUs(Algo::Binomial, in), 7 * (a + 1000 * b), 1e-9);
  // Pipelined in 4 chunks: the root sends each chunk to every child in turn.
  in.nranks = 64;
  in.chunkBytes = 250;
  EXPECT_NEAR(estimateUs(Algo::Binomial, in), 6 * (4 * a + 1000 * b), 1e-9);
  // Bruck: log2(n) latencies, the ring's bytes, and the rotation's local copy.
  in.coll = Coll::AllGather;
  in.bytes = 64000;
  EXPECT_NEAR(estimateUs(Algo::Bruck, in), 6 * a + 63.0 / 64 * 64000 * b + 64000 * b, 1e-9);
  EXPECT_LT(estimateUs(Algo::Bruck, in), estimateUs(Algo::Ring, in));
}

TEST(Selector, LogDepthOnlyWhereTheyApply) {
  Selector s = makeSelector(1, 64);
  SelectInput in = s.input();
  for (Coll c : {Coll::AllReduce, Coll::Broadcast, Coll::Reduce, Coll::AllGather, Coll::ReduceScatter, Coll::AlltoAll,
                 Coll::Gather, Coll::Scatter}) {
    in.coll = c;
    EXPECT_EQ(applicable(Algo::Binomial, in), c == Coll::Broadcast || c == Coll::Reduce) << algo::collName(c);
    EXPECT_EQ(applicable(Algo::Bruck, in), c == Coll::AllGather) << algo::collName(c);
    // The all-reduce algorithms stay all-reduce only.
    if (c != Coll::AllReduce) {
      for (Algo a : {Algo::Tree, Algo::RecursiveDoubling, Algo::RecursiveHalvingDoubling, Algo::Direct})
        EXPECT_FALSE(applicable(a, in)) << algo::collName(c) << " " << algo::algoName(a);
    }
  }
  in.nranks = 1;
  for (Coll c : {Coll::Broadcast, Coll::Reduce, Coll::AllGather}) {
    in.coll = c;
    EXPECT_FALSE(applicable(Algo::Binomial, in));
    EXPECT_FALSE(applicable(Algo::Bruck, in));
  }
  EXPECT_NE(s.table(Coll::AllReduce, kSmall).find("binomial      n/a"), std::string::npos) << s.table(Coll::AllReduce, kSmall);
  EXPECT_NE(s.table(Coll::AllReduce, kSmall).find("bruck         n/a"), std::string::npos);
  EXPECT_NE(s.table(Coll::Broadcast, kSmall).find("bruck         n/a"), std::string::npos);
  EXPECT_NE(s.table(Coll::AllGather, kSmall).find("binomial      n/a"), std::string::npos);
  for (Coll c : {Coll::AllReduce, Coll::ReduceScatter, Coll::AlltoAll, Coll::Gather, Coll::Scatter})
    for (size_t bytes : {kSmall, kLarge}) {
      const Algo got = s.choose(c, bytes).algo;
      EXPECT_NE(got, Algo::Binomial) << algo::collName(c);
      EXPECT_NE(got, Algo::Bruck) << algo::collName(c);
    }
}

TEST(Selector, LogDepthFollowNcclAlgo) {
  {
    ScopedEnv e("NCCL_ALGO", "broadcast:ring;allgather:ring");
    Selector s = makeSelector(1, 64);
    EXPECT_EQ(s.choose(Coll::Broadcast, kSmall).algo, Algo::Ring);
    EXPECT_EQ(s.choose(Coll::AllGather, kSmall).algo, Algo::Ring);
    EXPECT_EQ(s.choose(Coll::Reduce, kSmall).algo, Algo::Binomial);  // not listed: the model decides
  }
  {
    ScopedEnv e("NCCL_ALGO", "broadcast:binomial;reduce:binomial;allgather:bruck");
    Selector s = makeSelector(1, 8);
    EXPECT_EQ(s.choose(Coll::Broadcast, kLarge).algo, Algo::Binomial);
    EXPECT_EQ(s.choose(Coll::Reduce, kLarge).algo, Algo::Binomial);
    EXPECT_EQ(s.choose(Coll::AllGather, kLarge).algo, Algo::Bruck);
  }
  {
    ScopedEnv e("NCCL_ALGO", "^binomial,bruck");
    Selector s = makeSelector(1, 64);
    EXPECT_EQ(s.choose(Coll::Broadcast, kSmall).algo, Algo::Ring);
    EXPECT_EQ(s.choose(Coll::AllGather, kSmall).algo, Algo::Ring);
    EXPECT_NE(s.table(Coll::Broadcast, kSmall).find("excluded by NCCL_ALGO"), std::string::npos);
  }
  {
    // Named for every collective: where it does not apply the ring runs, with the fallback noted.
    ScopedEnv e("NCCL_ALGO", "binomial");
    Selector s = makeSelector(1, 8);
    EXPECT_EQ(s.choose(Coll::Broadcast, kLarge).algo, Algo::Binomial);
    EXPECT_EQ(s.choose(Coll::AllGather, kSmall).algo, Algo::Ring);
    EXPECT_NE(s.table(Coll::AllGather, kSmall).find("fallback"), std::string::npos);
  }
}

TEST(Selector, OtherCollectivesFollowNcclAlgo) {
  ScopedEnv e("NCCL_ALGO", "allgather:ring;broadcast:hierarchical");
  Selector s = makeSelector(2, 8);
  EXPECT_EQ(s.choose(Coll::AllGather, kLarge).algo, Algo::Ring);
  EXPECT_EQ(s.choose(Coll::Broadcast, kLarge).algo, Algo::Hierarchical);
  EXPECT_EQ(s.choose(Coll::ReduceScatter, kLarge).algo, Algo::Hierarchical);  // not listed: the model decides
}

TEST(Selector, SingleRank) {
  Result<Selector> s = Selector::create(1, nullptr, FabricParams::defaults(), 2);
  ASSERT_TRUE(s.ok());
  Choice c = s->choose(Coll::AllReduce, kLarge);
  EXPECT_EQ(c.algo, Algo::Ring);
  EXPECT_EQ(c.estUs, 0);
  EXPECT_FALSE(Selector::create(0, nullptr, FabricParams::defaults(), 2).ok());
}

TEST(Selector, EnvOverridesWin) {
  {
    ScopedEnv e("NCCL_ALGO", "ring");
    EXPECT_EQ(makeSelector(2, 8).choose(Coll::AllReduce, kSmall).algo, Algo::Ring);
  }
  {
    ScopedEnv e("NCCL_ALGO", "allreduce:tree");
    EXPECT_EQ(makeSelector(2, 8).choose(Coll::AllReduce, kLarge).algo, Algo::Tree);
  }
  {
    ScopedEnv e("NCCL_ALGO", "^hierarchical,rd");
    Selector s = makeSelector(2, 8);
    EXPECT_NE(s.choose(Coll::AllReduce, kLarge).algo, Algo::Hierarchical);
    EXPECT_NE(s.choose(Coll::AllReduce, kSmall).algo, Algo::RecursiveDoubling);
    EXPECT_NE(s.table(Coll::AllReduce, kLarge).find("excluded by NCCL_ALGO"), std::string::npos);
  }
  {
    // Nothing applicable is left (hierarchical needs islands): fall back to the ring.
    ScopedEnv e("NCCL_ALGO", "hierarchical");
    Selector s = makeSelector(1, 4);
    EXPECT_EQ(s.choose(Coll::AllReduce, kLarge).algo, Algo::Ring);
    EXPECT_NE(s.table(Coll::AllReduce, kLarge).find("fallback"), std::string::npos);
  }
}

TEST(Selector, TableListsEveryAlgorithm) {
  Selector s = makeSelector(2, 8);
  for (size_t bytes : {kSmall, kLarge}) {
    const std::string t = s.table(Coll::AllReduce, bytes);
    for (int i = 0; i < algo::kNumAlgos; ++i)
      EXPECT_NE(t.find(algo::algoName(static_cast<Algo>(i))), std::string::npos) << t;
    EXPECT_NE(t.find("<- chosen"), std::string::npos) << t;
  }
  const std::string sweep = s.sweep(Coll::AllReduce, 8, kLarge);
  for (int i = 0; i < algo::kNumAlgos; ++i)
    EXPECT_NE(sweep.find(algo::algoName(static_cast<Algo>(i))), std::string::npos) << sweep;
  EXPECT_NE(sweep.find("hierarchical/2"), std::string::npos) << sweep;
  EXPECT_EQ(std::count(sweep.begin(), sweep.end(), '\n'), 1 + 24);  // header + 8 B .. 64 MiB
}

TEST(Selector, LogsOncePerSizeClass) {
  char path[] = "/tmp/atoll-tuning-log-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    ScopedEnv debug("NCCL_DEBUG", "INFO");
    ScopedEnv subsys("NCCL_DEBUG_SUBSYS", "TUNING");
    ScopedEnv file("NCCL_DEBUG_FILE", path);
    log::reset();
    Selector s = makeSelector(2, 8);
    for (int i = 0; i < 3; ++i) (void)s.choose(Coll::AllReduce, 1000);
    (void)s.choose(Coll::AllReduce, 1024);  // same power-of-two class as 1000
    (void)s.choose(Coll::AllReduce, kLarge);
    (void)s.choose(Coll::Broadcast, kLarge);
  }
  log::reset();
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  unlink(path);
  const std::string log = text.str();
  size_t tables = 0;
  for (size_t at = log.find("Tuning "); at != std::string::npos; at = log.find("Tuning ", at + 1)) ++tables;
  EXPECT_EQ(tables, 3u) << log;
  EXPECT_NE(log.find("NCCL INFO   hierarchical"), std::string::npos) << log;
}

// ---- tuner plugin ------------------------------------------------------------------------------

const std::string kPluginDir = ATOLL_TEST_TUNER_DIR;

int pluginLive(void* handle) {
  auto live = reinterpret_cast<int (*)()>(dlsym(handle, "atollTestTunerLive"));
  return live ? live() : -1;
}

TEST(TunerPlugin, V4ByPathOverridesTheModel) {
  const std::string lib = kPluginDir + "/libnccl-tuner-atolltest-v4.so";
  ScopedEnv e("NCCL_TUNER_PLUGIN", lib.c_str());
  void* handle = dlopen(lib.c_str(), RTLD_NOW);  // keeps the counter alive after the selector closes it
  ASSERT_NE(handle, nullptr) << dlerror();
  {
    Selector s = makeSelector(2, 8);
    ASSERT_TRUE(s.hasPlugin());
    EXPECT_EQ(pluginLive(handle), 1);
    for (size_t bytes : {kSmall, kLarge}) {
      Choice c = s.choose(Coll::AllReduce, bytes);
      EXPECT_EQ(c.algo, Algo::Ring) << s.table(Coll::AllReduce, bytes);
      EXPECT_EQ(c.nchannels, 1);
      EXPECT_EQ(c.estUs, 0);
    }
    EXPECT_NE(s.table(Coll::AllReduce, kLarge).find("tuner plugin"), std::string::npos);
    // The test plugin leaves other collectives alone: our channel choice stands.
    EXPECT_EQ(s.choose(Coll::Broadcast, kLarge).nchannels, 2);
  }
  EXPECT_EQ(pluginLive(handle), 0);  // destroy ran
  dlclose(handle);
}

TEST(TunerPlugin, V3ByPath) {
  const std::string lib = kPluginDir + "/libnccl-tuner-atolltest-v3.so";
  ScopedEnv e("NCCL_TUNER_PLUGIN", lib.c_str());
  Selector s = makeSelector(64, 8);
  ASSERT_TRUE(s.hasPlugin());
  EXPECT_EQ(s.choose(Coll::AllReduce, kLarge).algo, Algo::Ring);
}

// A name goes through dlopen's search path (LD_LIBRARY_PATH and the like), as in NCCL; a test
// cannot rely on that path (sanitizer runtimes intercept dlopen), so only the names are checked.
TEST(TunerPlugin, NameResolution) {
  EXPECT_EQ(TunerPlugin::candidates("foo"), (std::vector<std::string>{"libnccl-tuner-foo.so", "foo"}));
  EXPECT_EQ(TunerPlugin::candidates("/opt/x/libtuner.so"), (std::vector<std::string>{"/opt/x/libtuner.so"}));
}

TEST(TunerPlugin, NcclAlgoStillRestrictsThePlugin) {
  const std::string lib = kPluginDir + "/libnccl-tuner-atolltest-v4.so";
  ScopedEnv e("NCCL_TUNER_PLUGIN", lib.c_str());
  ScopedEnv a("NCCL_ALGO", "^ring");
  Selector s = makeSelector(2, 8);
  EXPECT_NE(s.choose(Coll::AllReduce, kLarge).algo, Algo::Ring);
}

TEST(TunerPlugin, ConcurrentChoose) {
  const std::string lib = kPluginDir + "/libnccl-tuner-atolltest-v4.so";
  ScopedEnv e("NCCL_TUNER_PLUGIN", lib.c_str());
  Selector s = makeSelector(2, 8);
  std::vector<std::thread> threads;
  std::atomic<int> rings{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i) rings += s.choose(Coll::AllReduce, size_t{8} << (i % 20)).algo == Algo::Ring;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(rings.load(), 800);
}

TEST(TunerPlugin, MissingOnlyWarns) {
  for (const char* spec : {"/nonexistent/libnccl-tuner-x.so", "no-such-tuner"}) {
    ScopedEnv e("NCCL_TUNER_PLUGIN", spec);
    Selector s = makeSelector(2, 8);
    EXPECT_FALSE(s.hasPlugin());
    EXPECT_EQ(s.choose(Coll::AllReduce, kLarge).algo, Algo::Hierarchical);
  }
}

TEST(TunerPlugin, LibraryWithoutTheSymbolOnlyWarns) {
  // Any shared object without ncclTunerPlugin_v3/v4: the v4 test plugin's sibling symbols are not
  // enough, so use libc itself.
  ScopedEnv e("NCCL_TUNER_PLUGIN", "libc.so.6");
  Selector s = makeSelector(2, 8);
  EXPECT_FALSE(s.hasPlugin());
}

}  // namespace
}  // namespace atl::tuning

namespace {

int usableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  return CPU_COUNT(&set);
}

// ATOLL_SPIN_COUNT's default spins less where a communicator has more ranks on the host than the
// process has cores (core/group.cc): a communicator learns that at init.
TEST(Oversubscription, RanksOutnumberingTheUsableCoresAreSeenAtInit) {
  const int cores = usableCores();
  EXPECT_FALSE(atl::outnumbersCores(1));
  EXPECT_FALSE(atl::outnumbersCores(cores));
  EXPECT_TRUE(atl::outnumbersCores(cores + 1));
  for (int n : {1, cores + 1}) {
    std::vector<ncclComm_t> comms(static_cast<size_t>(n));
    ASSERT_EQ(ncclCommInitAll(comms.data(), n, nullptr), ncclSuccess);
    for (ncclComm_t c : comms) EXPECT_EQ(c->topology.oversubscribed, n > cores) << n << " ranks, " << cores << " cores";
    for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  }
}

}  // namespace
