// Island maps for the schedule tests: contiguous blocks of ranks, interleaved (strided) members,
// or any rank -> island assignment.
#pragma once

#include <memory>
#include <vector>

#include "algorithms/schedule.h"

namespace atl::algo::test {

using Map = std::shared_ptr<const topo::IslandMap>;

inline Map islandsFrom(const std::vector<int>& islandOf) {
  auto m = std::make_shared<topo::IslandMap>();
  m->islandOf = islandOf;
  for (size_t r = 0; r < islandOf.size(); ++r) {
    if (static_cast<size_t>(islandOf[r]) >= m->members.size()) m->members.resize(static_cast<size_t>(islandOf[r]) + 1);
    m->members[static_cast<size_t>(islandOf[r])].push_back(static_cast<int>(r));
  }
  return m;
}

/// Consecutive ranks, island i holding sizes[i] of them.
inline Map blocks(const std::vector<int>& sizes) {
  std::vector<int> of;
  for (size_t i = 0; i < sizes.size(); ++i) of.insert(of.end(), static_cast<size_t>(sizes[i]), static_cast<int>(i));
  return islandsFrom(of);
}

/// Rank r on island r % k: members interleave, so island rings and chains do not follow the ring.
inline Map strided(int n, int k) {
  std::vector<int> of(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) of[static_cast<size_t>(r)] = r % k;
  return islandsFrom(of);
}

}  // namespace atl::algo::test
