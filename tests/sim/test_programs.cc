// perf/sim/programs.h: the engine's schedules, compressed, keep every step's shape in order; a
// ring's steps per channel collapse to a few runs.
#include <gtest/gtest.h>

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

// Expands the runs again and compares them with the schedule, step by step.
void expectSameSteps(const algo::Schedule& s, const std::vector<CompressedProgram>& c) {
  ASSERT_EQ(s.programs.size(), c.size());
  for (size_t p = 0; p < c.size(); ++p) {
    EXPECT_EQ(c[p].channel, s.programs[p].channel);
    ASSERT_EQ(c[p].steps(), s.programs[p].steps.size());
    size_t i = 0;
    for (const atl::sim::Run& r : c[p].runs)
      for (uint32_t k = 0; k < r.repeat; ++k, ++i) ASSERT_EQ(r.shape, atl::sim::shapeOf(s.programs[p].steps[i])) << p << " " << i;
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
