// The all-reduce algorithms beyond the ring (Rabenseifner, one-shot, double binary tree,
// hierarchical), proved by the symbolic verifier: right contributions, no deadlock, no step
// writing what it sends, no two programs sharing a link direction, and the same combination
// order on every rank (so results agree bitwise).
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "algorithms/verify.h"
#include "tests/unit/island_maps.h"
#include "tests/unit/verify_specs.h"

namespace atl::algo {
namespace {

using test::Map;
using test::blocks;
using test::islandsFrom;
using test::strided;

const size_t kCounts[] = {0, 1, 2, 3, 7, 64, 257};

CollSpec spec(Algo a, int n, size_t count, int nch, size_t chunk, bool inPlace) {
  return test::makeSpec(Coll::AllReduce, a, n, count, 0, nch, chunk, inPlace);
}

using test::expectVerified;

void sweep(CollSpec base) {
  for (size_t count : kCounts)
    for (int nch : {1, 2, 3})
      for (size_t chunk : {1ul, 4ul, 1000ul})
        for (bool inPlace : {false, true}) {
          CollSpec s = base;
          s.count = count, s.nchannels = nch, s.chunkElems = chunk, s.inPlace = inPlace;
          expectVerified(s);
          if (::testing::Test::HasFailure()) return;
        }
}

const int kRankCounts[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 32, 64};

class EveryShape : public ::testing::TestWithParam<std::tuple<Algo, int>> {};

TEST_P(EveryShape, CountsChannelsChunksLayouts) {
  auto [algo, n] = GetParam();
  sweep(spec(algo, n, 0, 1, 1, false));
}

INSTANTIATE_TEST_SUITE_P(Algos, EveryShape,
                         ::testing::Combine(::testing::Values(Algo::RecursiveHalvingDoubling, Algo::Direct, Algo::Tree,
                                                              Algo::Hierarchical),
                                            ::testing::ValuesIn(kRankCounts)),
                         [](const auto& info) {
                           return std::string(algoName(std::get<0>(info.param))) + "_n" +
                                  std::to_string(std::get<1>(info.param));
                         });

class HierarchicalIslands : public ::testing::TestWithParam<int> {};

TEST_P(HierarchicalIslands, BlocksOfFourAndStridedThrees) {
  const int n = GetParam();
  CollSpec s = spec(Algo::Hierarchical, n, 0, 1, 1, false);
  std::vector<int> sizes;
  for (int left = n; left > 0; left -= 4) sizes.push_back(std::min(left, 4));  // last one short
  s.islands = blocks(sizes);
  sweep(s);
  s.islands = strided(n, 3);
  sweep(s);
}

INSTANTIATE_TEST_SUITE_P(Algos, HierarchicalIslands, ::testing::ValuesIn(kRankCounts));

TEST(Hierarchical, UnevenAndEqualIslands) {
  for (const auto& sizes : std::vector<std::vector<int>>{{3, 5, 8}, {1, 1, 6}, {8, 5, 3}, {6, 1, 1}, {4, 4, 4, 4, 4, 4, 4, 4},
                                                         {2, 7}, {5, 5, 5}}) {
    CollSpec s = spec(Algo::Hierarchical, std::accumulate(sizes.begin(), sizes.end(), 0), 0, 1, 1, false);
    s.islands = blocks(sizes);
    sweep(s);
    if (HasFailure()) return;
  }
}

TEST(Hierarchical, OneIslandOrNoMapIsTheRing) {
  CollSpec s = spec(Algo::Hierarchical, 6, 64, 1, 1, false);
  CollSpec ring = s;
  ring.algo = Algo::Ring;
  const size_t ringSteps = buildSchedule(ring).programs.at(0).steps.size();
  EXPECT_EQ(buildSchedule(s).programs.at(0).steps.size(), ringSteps);
  s.islands = blocks({6});
  EXPECT_EQ(buildSchedule(s).programs.at(0).steps.size(), ringSteps);
  expectVerified(s);
}

TEST(LargeRankCounts, RabenseifnerAt1000And4096) {
  for (int n : {1000, 4096})
    for (size_t count : {1ul, 37ul, 1000ul})
      for (bool inPlace : {false, true}) expectVerified(spec(Algo::RecursiveHalvingDoubling, n, count, 2, 64, inPlace));
}

TEST(LargeRankCounts, HierarchicalAt1000And4096) {
  CollSpec s = spec(Algo::Hierarchical, 4096, 0, 2, 1, false);
  s.islands = blocks(std::vector<int>(64, 64));
  for (size_t count : {1ul, 37ul, 200ul}) {
    s.count = count;
    expectVerified(s);
  }
  s.chunkElems = 1000;  // recursive doubling across the 64 islands
  expectVerified(s);
  std::vector<int> sizes;
  for (int left = 1000; left > 0; left -= 48) sizes.push_back(std::min(left, 48));  // 20 of 48, one of 40
  s = spec(Algo::Hierarchical, 1000, 0, 2, 1, true);
  s.islands = blocks(sizes);
  for (size_t count : {1ul, 37ul, 100ul}) {
    s.count = count;
    expectVerified(s);
  }
}

TEST(Shapes, HopCounts) {
  // log2(8) halving + log2(8) doubling levels.
  EXPECT_EQ(buildSchedule(spec(Algo::RecursiveHalvingDoubling, 8, 64, 1, 1, false)).programs.at(0).steps.size(), 6u);
  // One-shot: n-1 exchanges and n-1 local reductions.
  EXPECT_EQ(buildSchedule(spec(Algo::Direct, 8, 64, 1, 1, false)).programs.at(0).steps.size(), 14u);
  // The double tree uses two channels when it has them, one otherwise.
  EXPECT_EQ(buildSchedule(spec(Algo::Tree, 8, 64, 2, 8, false)).programs.size(), 2u);
  EXPECT_EQ(buildSchedule(spec(Algo::Tree, 8, 64, 1, 8, false)).programs.size(), 1u);
}

// Deliberately broken variants: the proofs above mean nothing unless these fail.
Schedule directRankOneReversed(const CollSpec& s) {
  // Correct contributions, but rank 1 folds them in another order: bits would differ.
  CollSpec d = s;
  d.algo = Algo::Direct;
  Schedule out = buildSchedule(d);
  if (s.rank != 1) return out;
  std::vector<Step>& steps = out.programs.at(0).steps;
  Step& first = steps[steps.size() - static_cast<size_t>(s.nranks - 1)];  // x0 op x1
  Step& second = (&first)[1];                                               // (.) op x2
  const Ref x0 = first.src, x1 = first.acc, x2 = second.acc;
  first.src = x1, first.acc = x2;  // (x1 op x2) op x0 ...
  second.acc = x0;
  return out;
}
Schedule rhdLosesAFoldedRank(const CollSpec& s) {
  CollSpec r = s;
  r.algo = Algo::RecursiveHalvingDoubling;
  Schedule out = buildSchedule(r);
  if (s.rank == 1) out.programs.at(0).steps.front().reduce = false;  // drops rank 0's input
  return out;
}
Schedule treeSharesALink(const CollSpec& s) {
  // Both trees on channel 0: the same link direction carried by two programs.
  CollSpec t = s;
  t.algo = Algo::Tree;
  Schedule out = buildSchedule(t);
  for (Program& p : out.programs) p.channel = 0;
  return out;
}

TEST(Verifier, RejectsBrokenVariantsOfTheNewGenerators) {
  CollSpec s = spec(Algo::Direct, 4, 16, 1, 1, false);
  ASSERT_TRUE(verifySchedule(s).ok);
  VerifyResult order = verifySchedule(s, &directRankOneReversed);
  EXPECT_FALSE(order.ok);
  EXPECT_NE(order.error.find("different order"), std::string::npos) << order.error;

  s = spec(Algo::RecursiveHalvingDoubling, 6, 16, 1, 1, false);
  ASSERT_TRUE(verifySchedule(s).ok);
  VerifyResult lost = verifySchedule(s, &rhdLosesAFoldedRank);
  EXPECT_FALSE(lost.ok);
  EXPECT_NE(lost.error.find("contribution"), std::string::npos) << lost.error;

  s = spec(Algo::Tree, 8, 64, 2, 4, false);
  ASSERT_TRUE(verifySchedule(s).ok);
  VerifyResult shared = verifySchedule(s, &treeSharesALink);
  EXPECT_FALSE(shared.ok);
  EXPECT_NE(shared.error.find("both"), std::string::npos) << shared.error;
}

}  // namespace
}  // namespace atl::algo
