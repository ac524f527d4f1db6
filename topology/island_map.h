// Which island each rank belongs to: the one topology fact the schedule generators consume.
// It lives here, below algorithms/, so the generators depend on topology's output type and not
// the other way round. Derived by topology/islands.h; shared, immutable, one per communicator.
#pragma once

#include <vector>

namespace atl::topo {

struct IslandMap {
  std::vector<int> islandOf;              // rank -> island index
  std::vector<std::vector<int>> members;  // island index -> its ranks, ascending
};

}  // namespace atl::topo
