// The two-level chain shared by hierarchical broadcast and reduce: one leader per island (the
// root on its own island, elsewhere the member at the root's local index modulo the island size,
// so strided islands pick ranks near the root), a chain of leaders in island order starting at the
// root's island, and in each island a chain starting at its leader in member order.
#pragma once

#include "algorithms/schedule.h"

namespace atl::algo {

struct HierChain {
  int leaderPrev = -1, leaderNext = -1;  // neighbours in the leader chain (leaders only); prev is rootwards
  int islandPrev = -1, islandNext = -1;  // neighbours in the island chain; prev is leaderwards
};

/// This rank's neighbours for s.root; s.islands must be usable.
HierChain hierChain(const CollSpec& s);

}  // namespace atl::algo
