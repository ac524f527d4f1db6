// perf/sim/programs.h: the engine's schedules, compressed, keep every step's shape in order; a
// ring's steps per channel collapse to a few runs.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "algorithms/schedule.h"
#include "perf/sim/programs.h"

namespace algo = atl::algo;
using atl::sim::compress;
using atl::sim::CompressedProgram;

namespace {

algo::CollSpec spec(algo::Algo a, int n, int rank, size_t count, int channels = 2) {
  algo::CollSpec s;
  s.coll = algo::Coll::AllReduce;
  s.nranks = n;
  s.rank = rank;
  s.count = count;
  s.nchannels = channels;
  s.chunkElems = 1024;
  s.algo = a;
  return s;
}

// Expands the runs again and compares them with the schedule, step by step: the same kinds, peers
// and reductions, counts within one element of the run's mean, and the run's totals exact.
void expectSameSteps(const algo::Schedule& s, const std::vector<CompressedProgram>& c) {
  ASSERT_EQ(s.programs.size(), c.size());
  for (size_t p = 0; p < c.size(); ++p) {
    EXPECT_EQ(c[p].channel, s.programs[p].channel);
    ASSERT_EQ(c[p].steps(), s.programs[p].steps.size());
    size_t i = 0;
    for (const atl::sim::Run& r : c[p].runs) {
      uint64_t sent = 0, received = 0;
      for (uint32_t k = 0; k < r.repeat; ++k, ++i) {
        const atl::sim::StepShape step = atl::sim::shapeOf(s.programs[p].steps[i]);
        ASSERT_TRUE(atl::sim::mergeable(r.shape, step)) << p << " " << i;
        EXPECT_LT(std::abs(static_cast<double>(step.sendCount) - r.sendMean()), 1.0);
        EXPECT_LT(std::abs(static_cast<double>(step.recvCount) - r.recvMean()), 1.0);
        sent += step.sendCount;
        received += step.recvCount;
      }
      EXPECT_EQ(sent, r.sendTotal);
      EXPECT_EQ(received, r.recvTotal);
    }
  }
}

}  // namespace

TEST(SimPrograms, EveryAlgorithmsStepsSurviveCompression) {
  for (algo::Algo a : {algo::Algo::Ring, algo::Algo::Tree, algo::Algo::RecursiveHalvingDoubling, algo::Algo::RecursiveDoubling,
                       algo::Algo::Direct})
    for (int rank : {0, 5, 11}) {
      const algo::Schedule s = algo::buildSchedule(spec(a, 12, rank, 1 << 18));
      expectSameSteps(s, compress(s));
    }
}

TEST(SimPrograms, ARingOfAThousandRanksIsAFewRunsPerChannel) {
  const int n = 1024;
  const algo::Schedule s = algo::buildSchedule(spec(algo::Algo::Ring, n, 17, size_t{1} << 24));
  const std::vector<CompressedProgram> c = compress(s);
  expectSameSteps(s, c);
  for (const CompressedProgram& p : c) {
    EXPECT_EQ(p.steps(), 2u * (n - 1));
    EXPECT_LE(p.runs.size(), 8u);
  }
}

// 1000 ranks do not divide 2^24 elements: chunks of 16777 and 16778 alternate, and still merge.
TEST(SimPrograms, UnevenChunksStillMergeIntoRuns) {
  const int n = 1000;
  const algo::Schedule s = algo::buildSchedule(spec(algo::Algo::Ring, n, 3, size_t{1} << 24, 1));
  const std::vector<CompressedProgram> c = compress(s);
  expectSameSteps(s, c);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_LE(c[0].runs.size(), 8u);
}

// A flat ring is the same program on every rank, relabelled; a tree is not.
TEST(SimPrograms, RelabelledRingMatchesTheRanksOwnSchedule) {
  const int n = 48;
  const std::vector<CompressedProgram> zero = compress(algo::buildSchedule(spec(algo::Algo::Ring, n, 0, 100003)));
  for (int r : {1, 17, 47}) {
    const std::vector<CompressedProgram> own = compress(algo::buildSchedule(spec(algo::Algo::Ring, n, r, 100003)));
    ASSERT_EQ(own.size(), zero.size());
    for (size_t p = 0; p < own.size(); ++p) {
      EXPECT_TRUE(atl::sim::equivalent(atl::sim::relabel(zero[p], r, n), own[p])) << r;
      if (r != 0) {
        EXPECT_FALSE(atl::sim::equivalent(zero[p], own[p]));
      }
    }
  }
  const auto tree0 = compress(algo::buildSchedule(spec(algo::Algo::Tree, n, 0, 100003)));
  const auto tree5 = compress(algo::buildSchedule(spec(algo::Algo::Tree, n, 5, 100003)));
  bool allEquivalent = tree0.size() == tree5.size();
  for (size_t p = 0; allEquivalent && p < tree0.size(); ++p)
    allEquivalent = atl::sim::equivalent(atl::sim::relabel(tree0[p], 5, n), tree5[p]);
  EXPECT_FALSE(allEquivalent);
}
