// perf/sim/max_min.h: hand-checked allocations, and on random instances the property that defines
// max-min fairness: every flow has a bottleneck, a saturated resource (or its own cap) on which no
// other flow gets more.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "perf/sim/max_min.h"

using atl::sim::FlowPaths;
using atl::sim::maxMinRates;

namespace {

FlowPaths paths(std::initializer_list<std::vector<uint32_t>> rows) {
  FlowPaths p;
  for (const auto& r : rows) p.add(r);
  return p;
}

}  // namespace

TEST(MaxMin, OneLinkIsSharedEqually) {
  const std::vector<double> cap = {12.0};
  const std::vector<double> r = maxMinRates(cap, paths({{0}, {0}, {0}}));
  EXPECT_EQ(r, (std::vector<double>{4, 4, 4}));
}

TEST(MaxMin, AFlowSlowedElsewhereLeavesItsShareToTheOthers) {
  // f0 and f1 share a 1 GB/s link; f1 and f2 share a 10 GB/s one: f1 is held to 0.5 by the first,
  // so f2 takes the rest of the second.
  const std::vector<double> cap = {1.0, 10.0};
  const std::vector<double> r = maxMinRates(cap, paths({{0}, {0, 1}, {1}}));
  EXPECT_DOUBLE_EQ(r[0], 0.5);
  EXPECT_DOUBLE_EQ(r[1], 0.5);
  EXPECT_DOUBLE_EQ(r[2], 9.5);
}

TEST(MaxMin, PerFlowCapsAndUnconstrainedFlows) {
  const std::vector<double> cap = {1.0};
  FlowPaths p;
  const uint32_t link[] = {0};
  p.add(link, 0.2);
  p.add(link);
  p.add({}, 3.0);  // only its own cap
  p.add({});       // nothing limits it
  const std::vector<double> r = maxMinRates(cap, p);
  EXPECT_DOUBLE_EQ(r[0], 0.2);
  EXPECT_DOUBLE_EQ(r[1], 0.8);
  EXPECT_DOUBLE_EQ(r[2], 3.0);
  EXPECT_TRUE(std::isinf(r[3]));
}

TEST(MaxMin, ALinkCrossedTwiceCountsTwice) {
  const std::vector<double> cap = {6.0};
  const std::vector<double> r = maxMinRates(cap, paths({{0, 0}, {0}}));
  EXPECT_DOUBLE_EQ(r[0], 2.0);
  EXPECT_DOUBLE_EQ(r[1], 2.0);
}

TEST(MaxMin, RandomInstancesAreFeasibleAndEveryFlowHasABottleneck) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int nr = 1 + static_cast<int>(rng() % 20), nf = 1 + static_cast<int>(rng() % 60);
    std::vector<double> cap(static_cast<size_t>(nr));
    for (double& c : cap) c = 1.0 + static_cast<double>(rng() % 1000) / 10.0;
    FlowPaths p;
    for (int f = 0; f < nf; ++f) {
      std::vector<uint32_t> path;
      const int hops = 1 + static_cast<int>(rng() % 4);
      for (int h = 0; h < hops; ++h) path.push_back(static_cast<uint32_t>(rng() % static_cast<unsigned>(nr)));
      std::sort(path.begin(), path.end());
      path.erase(std::unique(path.begin(), path.end()), path.end());
      p.add(path, rng() % 5 == 0 ? 0.5 + static_cast<double>(rng() % 100) / 10.0 : 0.0);
    }
    const std::vector<double> r = maxMinRates(cap, p);
    std::vector<double> load(static_cast<size_t>(nr), 0.0);
    for (int f = 0; f < nf; ++f)
      for (uint32_t i = p.offsets[static_cast<size_t>(f)]; i < p.offsets[static_cast<size_t>(f) + 1]; ++i) load[p.resources[i]] += r[static_cast<size_t>(f)];
    for (int q = 0; q < nr; ++q) ASSERT_LE(load[static_cast<size_t>(q)], cap[static_cast<size_t>(q)] * (1 + 1e-9)) << "trial " << trial;
    for (int f = 0; f < nf; ++f) {
      const size_t fi = static_cast<size_t>(f);
      ASSERT_GT(r[fi], 0.0);
      if (p.cap[fi] > 0 && std::abs(r[fi] - p.cap[fi]) < 1e-9 * p.cap[fi]) continue;  // its own cap binds
      bool bottleneck = false;
      for (uint32_t i = p.offsets[fi]; i < p.offsets[fi + 1] && !bottleneck; ++i) {
        const uint32_t q = p.resources[i];
        if (load[q] < cap[q] * (1 - 1e-9)) continue;
        bool highest = true;
        for (int g = 0; g < nf; ++g)
          for (uint32_t j = p.offsets[static_cast<size_t>(g)]; j < p.offsets[static_cast<size_t>(g) + 1]; ++j)
            if (p.resources[j] == q && r[static_cast<size_t>(g)] > r[fi] * (1 + 1e-9)) highest = false;
        bottleneck = highest;
      }
      ASSERT_TRUE(bottleneck) << "trial " << trial << " flow " << f << " rate " << r[fi];
    }
  }
}
