#include "algorithms/hier_chain.h"

#include "algorithms/hier_groups.h"
#include "algorithms/ring.h"

namespace atl::algo {

HierChain hierChain(const CollSpec& s) {
  const topo::IslandMap& m = *s.islands;
  const IslandPlace me = placeOf(m, s.rank), root = placeOf(m, s.root);
  const int nIslands = static_cast<int>(m.members.size());
  auto leaderOf = [&](int j) {
    const std::vector<int>& mem = m.members[static_cast<size_t>(j)];
    return mem[static_cast<size_t>(root.local) % mem.size()];
  };
  const std::vector<int>& mine = m.members[static_cast<size_t>(me.island)];
  const int size = static_cast<int>(mine.size());
  const int lead = root.local % size;
  const int k = mod(me.local - lead, size);  // position in the island chain; 0 is the leader
  HierChain out;
  if (k > 0) out.islandPrev = mine[static_cast<size_t>(mod(me.local - 1, size))];
  if (k < size - 1) out.islandNext = mine[static_cast<size_t>(mod(me.local + 1, size))];
  if (k == 0) {
    const int kl = mod(me.island - root.island, nIslands);
    if (kl > 0) out.leaderPrev = leaderOf(mod(me.island - 1, nIslands));
    if (kl < nIslands - 1) out.leaderNext = leaderOf(mod(me.island + 1, nIslands));
  }
  return out;
}

}  // namespace atl::algo
