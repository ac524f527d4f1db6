// Hierarchical all-gather, reduce-scatter, broadcast and reduce, proved by the symbolic verifier
// over equal, uneven, contiguous and strided island maps, and measured: the point of these
// schedules is sending less across island boundaries than the ring and chain do.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "algorithms/verify.h"
#include "tests/unit/island_maps.h"

namespace atl::algo {
namespace {

using test::Map;
using test::blocks;
using test::islandsFrom;
using test::strided;

const size_t kCounts[] = {0, 1, 2, 3, 7, 64, 257};
const Coll kColls[] = {Coll::AllGather, Coll::ReduceScatter, Coll::Broadcast, Coll::Reduce};
const int kRankCounts[] = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
// Same code paths as the small counts, 5-20x slower under sanitizers, which skip LargeRankCounts.
const int kLargeRankCounts[] = {32, 64};



struct NamedMap {
  std::string name;
  Map map;
};

/// The maps swept for n ranks: equal blocks of 2, 3 and 4, strided by 2 and 3, and uneven blocks
/// of 4 with a short last island, wherever they give at least two islands.
std::vector<NamedMap> mapsFor(int n) {
  std::vector<NamedMap> out;
  for (int size : {2, 3, 4})
    if (n % size == 0 && n / size >= 2) out.push_back({"blocks of " + std::to_string(size), blocks(std::vector<int>(static_cast<size_t>(n / size), size))});
  for (int k : {2, 3})
    if (n >= k) out.push_back({"strided by " + std::to_string(k), strided(n, k)});
  if (n > 4 && n % 4 != 0) {
    std::vector<int> sizes;
    for (int left = n; left > 0; left -= 4) sizes.push_back(std::min(left, 4));
    out.push_back({"uneven blocks of 4", blocks(sizes)});
  }
  return out;
}

CollSpec spec(Coll c, int n, Map islands, size_t count = 0, int root = 0) {
  CollSpec s;
  s.coll = c;
  s.algo = Algo::Hierarchical;
  s.nranks = n;
  s.root = root;
  s.count = count;
  s.islands = std::move(islands);
  return s;
}

std::string describeSpec(const CollSpec& s) {
  return std::string(collName(s.coll)) + " n=" + std::to_string(s.nranks) + " root=" + std::to_string(s.root) +
         " count=" + std::to_string(s.count) + " nch=" + std::to_string(s.nchannels) +
         " chunk=" + std::to_string(s.chunkElems) + " inPlace=" + std::to_string(s.inPlace) +
         " islands=" + std::to_string(s.islands ? s.islands->members.size() : 0);
}

void expectVerified(const CollSpec& s, const std::string& what = "") {
  VerifyResult r = verifySchedule(s);
  EXPECT_TRUE(r.ok) << describeSpec(s) << " " << what << ": " << r.error;
}

/// A hash of every rank's schedule: shapes that generate the same schedules verify the same way.
size_t fingerprint(CollSpec s) {
  size_t h = s.inPlace;
  auto mix = [&h](size_t v) { h = (h ^ v) * 0x100000001b3ull + (h >> 29); };
  for (int r = 0; r < s.nranks; ++r) {
    s.rank = r;
    const Schedule sched = buildSchedule(s);
    mix(sched.scratchElems);
    for (const Program& p : sched.programs) {
      mix(0xabcdefull + static_cast<size_t>(p.channel));
      for (const Step& st : p.steps)
        for (size_t v : {size_t{static_cast<uint8_t>(st.kind)}, static_cast<size_t>(st.sendPeer + 1), size_t{st.src.buf},
                         st.src.offset, st.sendCount, static_cast<size_t>(st.recvPeer + 1), size_t{st.dst.buf},
                         st.dst.offset, st.recvCount, size_t{st.reduce}, size_t{st.acc.buf}, st.acc.offset})
          mix(v);
    }
  }
  return h;
}

void sweep(const CollSpec& base, const std::string& what) {
  for (size_t count : kCounts) {
    // Many (channels, chunk) pairs give identical schedules (3 channels act as 2; all-gather and
    // reduce-scatter use the chunk only to pick channels); each distinct one is verified once.
    std::set<size_t> seen;
    for (int nch : {1, 2, 3})
      for (size_t chunk : {1ul, 4ul, 1000ul})
        for (bool inPlace : {false, true}) {
          CollSpec s = base;
          s.count = count, s.nchannels = nch, s.chunkElems = chunk, s.inPlace = inPlace;
          if (!seen.insert(fingerprint(s)).second) continue;
          expectVerified(s, what);
          if (::testing::Test::HasFailure()) return;
        }
  }
}

bool rooted(Coll c) { return c == Coll::Broadcast || c == Coll::Reduce; }

/// Every root while n is small, else 0, 1, the middle and the last.
std::vector<int> rootsFor(Coll c, int n) {
  if (!rooted(c)) return {0};
  if (n <= 8) {
    std::vector<int> all(static_cast<size_t>(n));
    std::iota(all.begin(), all.end(), 0);
    return all;
  }
  return {0, 1, n / 2, n - 1};
}

class EveryShape : public ::testing::TestWithParam<std::tuple<Coll, int>> {};

TEST_P(EveryShape, MapsRootsCountsChannelsChunksLayouts) {
  auto [coll, n] = GetParam();
  for (const NamedMap& m : mapsFor(n))
    for (int root : rootsFor(coll, n)) {
      sweep(spec(coll, n, m.map, 0, root), m.name);
      if (HasFailure()) return;
    }
}

std::string shapeName(const ::testing::TestParamInfo<std::tuple<Coll, int>>& info) {
  return std::string(collName(std::get<0>(info.param))) + "_n" + std::to_string(std::get<1>(info.param));
}
INSTANTIATE_TEST_SUITE_P(Hier, EveryShape, ::testing::Combine(::testing::ValuesIn(kColls), ::testing::ValuesIn(kRankCounts)),
                         shapeName);
INSTANTIATE_TEST_SUITE_P(LargeRankCounts, EveryShape,
                         ::testing::Combine(::testing::ValuesIn(kColls), ::testing::ValuesIn(kLargeRankCounts)), shapeName);

TEST(Hier, UnevenIslands) {
  for (const auto& sizes : std::vector<std::vector<int>>{{3, 5, 8}, {1, 1, 6}, {8, 5, 3}, {6, 1, 1}, {2, 7}, {1, 4}, {5, 5, 5}})
    for (Coll c : kColls) {
      const int n = std::accumulate(sizes.begin(), sizes.end(), 0);
      for (int root : rooted(c) ? std::vector<int>{0, 1, n / 2, n - 1} : std::vector<int>{0}) {
        sweep(spec(c, n, blocks(sizes), 0, root), "uneven");
        if (HasFailure()) return;
      }
    }
}

TEST(Hier, UnevenInterleavedIslands) {
  // Islands of 2, 3 and 5 whose members interleave: rank r on island 0, 1, 2, 2, 1, 2, 0, 2, 1, 2.
  const Map m = islandsFrom({0, 1, 2, 2, 1, 2, 0, 2, 1, 2});
  for (Coll c : kColls)
    for (int root : rootsFor(c, 8)) {  // roots 0..7 of the 10 ranks
      sweep(spec(c, 10, m, 0, root), "interleaved");
      if (HasFailure()) return;
    }
}

TEST(Hier, WithoutAUsableMapIsTheRingOrChain) {
  auto bad = std::make_shared<topo::IslandMap>();  // members out of order
  bad->islandOf = {0, 1, 0, 1, 0, 1};
  bad->members = {{4, 2, 0}, {1, 3, 5}};
  auto inconsistent = std::make_shared<topo::IslandMap>();  // rank 0 listed on island 1
  inconsistent->islandOf = {0, 0, 0, 1, 1, 1};
  inconsistent->members = {{1, 2, 3}, {0, 4, 5}};
  for (Coll c : kColls)
    for (Map m : {Map{}, blocks({6}), Map{bad}, Map{inconsistent}}) {
      CollSpec s = spec(c, 6, m, 64, 2);
      s.nchannels = 2;
      CollSpec plain = s;
      plain.algo = Algo::Ring;
      for (int r = 0; r < s.nranks; ++r) {
        s.rank = plain.rank = r;
        EXPECT_EQ(describe(buildSchedule(s)), describe(buildSchedule(plain))) << collName(c) << " rank " << r;
      }
      expectVerified(s);
    }
}

TEST(Hier, UsesOnlyChannelsZeroAndOne) {
  for (Coll c : kColls) {
    CollSpec s = spec(c, 12, strided(12, 3), 4096, 5);
    s.nchannels = 8, s.chunkElems = 16;
    size_t programs = 0;
    for (int r = 0; r < s.nranks; ++r) {
      s.rank = r;
      for (const Program& p : buildSchedule(s).programs) {
        EXPECT_LT(p.channel, 2) << collName(c);
        ++programs;
      }
    }
    EXPECT_EQ(programs, 2u * 12u) << collName(c);  // both channels on every rank for a large count
    expectVerified(s);
  }
}

/// Elements each rank sends to ranks on other islands, over the whole schedule.
std::vector<size_t> crossIslandElems(CollSpec s) {
  std::vector<size_t> out(static_cast<size_t>(s.nranks), 0);
  for (int r = 0; r < s.nranks; ++r) {
    s.rank = r;
    for (const Program& p : buildSchedule(s).programs)
      for (const Step& st : p.steps)
        if (st.kind == StepKind::Transfer && st.sendPeer >= 0 &&
            s.islands->islandOf[static_cast<size_t>(st.sendPeer)] != s.islands->islandOf[static_cast<size_t>(r)])
          out[static_cast<size_t>(r)] += st.sendCount;
  }
  return out;
}

TEST(Hier, AllGatherSendsFewerElementsAcrossIslands) {
  const size_t count = 64;
  for (const NamedMap& m : {NamedMap{"blocks", blocks({4, 4, 4, 4})}, NamedMap{"strided", strided(16, 4)}}) {
    CollSpec hier = spec(Coll::AllGather, 16, m.map, count);
    hier.nchannels = 2;
    CollSpec ring = hier;
    ring.algo = Algo::Ring;
    const std::vector<size_t> h = crossIslandElems(hier), g = crossIslandElems(ring);
    const size_t hTotal = std::accumulate(h.begin(), h.end(), size_t{0}), gTotal = std::accumulate(g.begin(), g.end(), size_t{0});
    // Every rank sends exactly islands-1 = 3 blocks across; the ring's island-boundary ranks send
    // n-1 = 15 (with strided islands every ring hop crosses).
    for (size_t v : h) EXPECT_EQ(v, 3 * count) << m.name;
    EXPECT_EQ(*std::max_element(g.begin(), g.end()), 15 * count) << m.name;
    EXPECT_LT(hTotal, gTotal) << m.name;
    EXPECT_EQ(gTotal, (m.name == "blocks" ? 4 : 16) * 15 * count) << m.name;
  }
}

TEST(Hier, ReduceScatterBroadcastReduceCrossIslandsLess) {
  const size_t count = 64;
  const Map m = strided(16, 4);
  for (Coll c : {Coll::ReduceScatter, Coll::Broadcast, Coll::Reduce}) {
    CollSpec hier = spec(c, 16, m, count, 5);
    CollSpec ring = hier;
    ring.algo = Algo::Ring;
    const std::vector<size_t> h = crossIslandElems(hier), g = crossIslandElems(ring);
    const size_t hTotal = std::accumulate(h.begin(), h.end(), size_t{0}), gTotal = std::accumulate(g.begin(), g.end(), size_t{0});
    // Reduce-scatter: every rank sends 3 blocks across. Broadcast / reduce: the buffer crosses
    // islands-1 = 3 times, the chain 15 times over strided islands.
    EXPECT_EQ(hTotal, (c == Coll::ReduceScatter ? 16 : 1) * 3 * count) << collName(c);
    EXPECT_EQ(gTotal, (c == Coll::ReduceScatter ? 16 : 1) * 15 * count) << collName(c);
  }
}

/// Steps on the longest dependency path of a chain schedule, counted as receive hops from the root.
int broadcastDepth(CollSpec s) {
  // A rank is `depth` hops from the root when it receives from a rank of depth-1.
  std::map<int, int> from;
  for (int r = 0; r < s.nranks; ++r) {
    s.rank = r;
    for (const Program& p : buildSchedule(s).programs)
      for (const Step& st : p.steps)
        if (st.kind == StepKind::Transfer && st.recvPeer >= 0) from[r] = st.recvPeer;
  }
  int deepest = 0;
  for (int r = 0; r < s.nranks; ++r) {
    int d = 0;
    for (int at = r; at != s.root; at = from.at(at)) ++d;
    deepest = std::max(deepest, d);
  }
  return deepest;
}

TEST(Hier, BroadcastLatencyIsIslandsPlusIslandSize) {
  CollSpec s = spec(Coll::Broadcast, 32, blocks(std::vector<int>(4, 8)), 64, 13);
  EXPECT_EQ(broadcastDepth(s), (4 - 1) + (8 - 1));
  s.algo = Algo::Ring;
  EXPECT_EQ(broadcastDepth(s), 31);
}

TEST(LargeRankCounts, ThousandRanksInEightIslands) {
  for (const NamedMap& m : {NamedMap{"blocks", blocks(std::vector<int>(8, 128))}, NamedMap{"strided", strided(1024, 8)},
                            NamedMap{"uneven", blocks({100, 150, 128, 128, 130, 128, 132, 128})}}) {
    for (Coll c : {Coll::AllGather, Coll::ReduceScatter})
      for (size_t count : {1ul, 3ul})
        for (int nch : {1, 2}) {
          CollSpec s = spec(c, 1024, m.map, count);
          s.nchannels = nch, s.inPlace = nch == 2;
          expectVerified(s, m.name);
        }
    for (Coll c : {Coll::Broadcast, Coll::Reduce})
      for (int root : {0, 517}) {
        CollSpec s = spec(c, 1024, m.map, 1000, root);
        s.nchannels = 2, s.chunkElems = 64, s.inPlace = root == 0;
        expectVerified(s, m.name);
      }
  }
}

}  // namespace
}  // namespace atl::algo
