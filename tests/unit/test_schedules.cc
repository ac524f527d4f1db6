// Every schedule generator, proved correct by the symbolic verifier for many rank counts, sizes,
// channel counts and in-place layouts; no network involved.
#include <gtest/gtest.h>

#include <tuple>

#include "algorithms/ring.h"
#include "algorithms/verify.h"
#include "tests/unit/verify_specs.h"

namespace atl::algo {
namespace {

const Coll kColls[] = {Coll::AllReduce, Coll::Broadcast, Coll::Reduce,  Coll::AllGather,
                       Coll::ReduceScatter, Coll::AlltoAll, Coll::Gather, Coll::Scatter};

CollSpec spec(Coll c, int n, size_t count, int root, int nch, size_t chunk, bool inPlace) {
  return test::makeSpec(c, Algo::Ring, n, count, root, nch, chunk, inPlace);
}

using test::expectVerified;

class SmallShapes : public ::testing::TestWithParam<std::tuple<Coll, int>> {};

TEST_P(SmallShapes, EveryCountRootChannelLayout) {
  auto [coll, n] = GetParam();
  for (size_t count : {0ul, 1ul, 2ul, 3ul, 7ul, 31ul, 64ul, 257ul})
    for (int nch : {1, 2, 3})
      for (size_t chunk : {1ul, 4ul, 1000ul})
        for (bool inPlace : {false, true})
          for (int root : {0, n - 1, n / 2}) {
            expectVerified(spec(coll, n, count, root, nch, chunk, inPlace));
            if (HasFailure()) return;
          }
}

INSTANTIATE_TEST_SUITE_P(Generators, SmallShapes,
                         ::testing::Combine(::testing::ValuesIn(kColls), ::testing::Values(1, 2, 3, 4, 5, 7, 8, 9, 16)),
                         [](const auto& info) {
                           return std::string(collName(std::get<0>(info.param))) + "_n" +
                                  std::to_string(std::get<1>(info.param));
                         });

TEST(RecursiveDoubling, EveryPowerOfTwoCountChannelLayout) {
  for (int n : {1, 2, 4, 8, 16, 64})
    for (size_t count : {0ul, 1ul, 2ul, 3ul, 7ul, 64ul, 257ul})
      for (int nch : {1, 2, 3})
        for (size_t chunk : {1ul, 4ul, 1000ul})
          for (bool inPlace : {false, true}) {
            CollSpec s = spec(Coll::AllReduce, n, count, 0, nch, chunk, inPlace);
            s.algo = Algo::RecursiveDoubling;
            expectVerified(s);
            if (HasFailure()) return;
          }
}

TEST(RecursiveDoubling, HopsAreLog2AndOtherRankCountsUseTheRing) {
  CollSpec s = spec(Coll::AllReduce, 8, 64, 0, 1, 1, false);
  s.algo = Algo::RecursiveDoubling;
  EXPECT_EQ(buildSchedule(s).programs.at(0).steps.size(), 3u);
  s.nranks = 6;  // not a power of two: the ring's 2(n-1) steps, and still correct
  EXPECT_EQ(buildSchedule(s).programs.at(0).steps.size(), 10u);
  expectVerified(s);
}

TEST(RingAllReduceRounds, EverySliceCountChannelLayout) {
  for (int n : {2, 3, 4, 5, 8})
    for (size_t count : {0ul, 1ul, 7ul, 64ul, 257ul, 1000ul})
      for (size_t slice : {1ul, 3ul, 16ul, 5000ul})
        for (int nch : {1, 2})
          for (bool inPlace : {false, true}) {
            CollSpec s = spec(Coll::AllReduce, n, count, 0, nch, 1, inPlace);
            s.ringSliceElems = slice;
            expectVerified(s);
            if (HasFailure()) return;
          }
}

TEST(RingAllReduceRounds, EachRoundIsAFullReduceScatterAndAllGather) {
  CollSpec s = spec(Coll::AllReduce, 4, 4 * 100, 0, 1, 1, false);
  EXPECT_EQ(buildSchedule(s).programs.at(0).steps.size(), 6u) << "no slice: one round of 2(n-1) steps";
  s.ringSliceElems = 30;  // 400 elements in rounds of at most 4 x 30: 4 rounds
  const Program p = buildSchedule(s).programs.at(0);
  ASSERT_EQ(p.steps.size(), 24u);
  // Round r covers [100r, 100r + 100): its first step sends rank 0's own chunk there, 25 elements.
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(p.steps[6 * r].src.offset, 100u * r);
    EXPECT_EQ(p.steps[6 * r].sendCount, 25u);
  }
  s.ringSliceElems = 1;  // rounds are capped; the schedule stays correct
  s.count = 4 * kMaxRingRounds * 2;
  EXPECT_EQ(buildSchedule(s).programs.at(0).steps.size(), 6 * kMaxRingRounds);
}

TEST(LargeRankCounts, EveryCollectiveAt4096WithMostChunksEmpty) {
  // Far fewer elements than ranks: most chunks are empty and their steps vanish, on both sides alike.
  // Collectives whose per-rank buffers grow with n (AllGather, ReduceScatter, AlltoAll, Gather,
  // Scatter) need n^2 simulated memory; they are covered at 1024 ranks below.
  for (Coll c : {Coll::AllReduce, Coll::Broadcast, Coll::Reduce})
    for (size_t count : {37ul, 4096ul * 3 + 5})
      if (c != Coll::AllReduce || count < 4096) expectVerified(spec(c, 4096, count, 4095, 2, 64, false));
}

TEST(LargeRankCounts, RingAllReduce512EveryChunkNonEmpty) {
  expectVerified(spec(Coll::AllReduce, 512, 512 * 2 + 17, 0, 2, 1, false));
}

TEST(LargeRankCounts, EveryCollectiveAt1024And1000) {
  for (Coll c : kColls)
    for (int n : {1000, 1024}) {
      if (c == Coll::AlltoAll && n == 1000) continue;
      size_t count = c == Coll::AlltoAll ? 1 : 2;
      expectVerified(spec(c, n, count, n / 3, 2, 1, false));
    }
}

// The verifier itself must reject broken schedules, or every proof above is empty.
Schedule dropLastStep(const CollSpec& s) {
  Schedule out = buildSchedule(s);
  if (s.rank == 1) out.programs.at(0).steps.pop_back();
  return out;
}
Schedule overwriteInsteadOfReduce(const CollSpec& s) {
  Schedule out = buildSchedule(s);
  if (s.rank == 2) out.programs.at(0).steps.front().reduce = false;
  return out;
}
Schedule sendWhatIsOverwritten(const CollSpec& s) {
  // Recursive doubling writing its running total in place: correct on paper, a race in the engine.
  CollSpec rd = s;
  rd.algo = Algo::RecursiveDoubling;
  Schedule out = buildSchedule(rd);
  for (Step& st : out.programs.at(0).steps) st.src = st.acc = st.dst;
  out.programs.at(0).steps.front().src = out.programs.at(0).steps.front().acc = sendAt(0);
  return out;
}

TEST(Verifier, RejectsBrokenSchedules) {
  CollSpec s = spec(Coll::AllReduce, 4, 16, 0, 1, 1, false);
  ASSERT_TRUE(verifySchedule(s).ok);
  VerifyResult dropped = verifySchedule(s, &dropLastStep);
  EXPECT_FALSE(dropped.ok);
  VerifyResult wrong = verifySchedule(s, &overwriteInsteadOfReduce);
  EXPECT_FALSE(wrong.ok);
  EXPECT_NE(wrong.error.find("contribution"), std::string::npos) << wrong.error;
  VerifyResult race = verifySchedule(s, &sendWhatIsOverwritten);
  EXPECT_FALSE(race.ok);
  EXPECT_NE(race.error.find("writes elements it is sending"), std::string::npos) << race.error;
}

TEST(Splits, EvenSplitCoversRangeExactly) {
  for (size_t total : {0ul, 1ul, 5ul, 100ul, 101ul})
    for (int parts : {1, 2, 3, 7, 64}) {
      size_t next = 0;
      for (int i = 0; i < parts; ++i) {
        Span sp = evenSplit(total, parts, i);
        EXPECT_EQ(sp.offset, next);
        next += sp.count;
      }
      EXPECT_EQ(next, total);
    }
}

}  // namespace
}  // namespace atl::algo
