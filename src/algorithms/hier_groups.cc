#include "algorithms/hier_groups.h"

#include <algorithm>

#include "algorithms/ring.h"

namespace atl::algo {

bool usableIslands(const CollSpec& s) {
  const topo::IslandMap* m = s.islands.get();
  if (m == nullptr || m->members.size() < 2 || m->islandOf.size() != static_cast<size_t>(s.nranks)) return false;
  size_t total = 0;
  for (size_t i = 0; i < m->members.size(); ++i) {
    const std::vector<int>& mem = m->members[i];
    if (mem.empty()) return false;
    for (size_t k = 0; k < mem.size(); ++k) {
      const int r = mem[k];
      if (r < 0 || r >= s.nranks || (k > 0 && r <= mem[k - 1])) return false;
      if (m->islandOf[static_cast<size_t>(r)] != static_cast<int>(i)) return false;
    }
    total += mem.size();
  }
  // Every member's islandOf points back at its island, so equal totals mean each rank once.
  return total == static_cast<size_t>(s.nranks);
}

IslandPlace placeOf(const topo::IslandMap& m, int rank) {
  IslandPlace at;
  at.island = m.islandOf[static_cast<size_t>(rank)];
  const std::vector<int>& mine = m.members[static_cast<size_t>(at.island)];
  at.local = static_cast<int>(std::lower_bound(mine.begin(), mine.end(), rank) - mine.begin());
  size_t smallest = mine.size();
  for (const auto& mem : m.members) smallest = std::min(smallest, mem.size());
  at.smallest = static_cast<int>(smallest);
  return at;
}

BlockRings blockRings(const CollSpec& s) {
  const topo::IslandMap& m = *s.islands;
  const IslandPlace at = placeOf(m, s.rank);
  BlockRings g{};
  g.n = s.nranks;
  g.p = s.rank;
  g.island = at.island;
  g.local = at.local;
  g.mine = m.members[static_cast<size_t>(at.island)];
  g.size = static_cast<int>(g.mine.size());
  g.L = at.smallest;
  g.nIslands = static_cast<int>(m.members.size());
  g.host = at.local < at.smallest;
  const size_t n = static_cast<size_t>(s.nranks);
  g.nch = channelsFor(s.count * n, std::min(s.nchannels, 2), s.chunkElems * n);
  g.merge = g.nch == 1;
  auto pick = [](const std::vector<int>& ring, int k) { return ring[static_cast<size_t>(mod(k, static_cast<int>(ring.size())))]; };
  g.islandNext = pick(g.mine, g.local + 1);
  g.islandPrev = pick(g.mine, g.local - 1);
  g.crossNext = g.crossPrev = -1;
  if (g.host) {
    const std::vector<int> cross = crossGroup(m, g.local);
    g.crossNext = pick(cross, g.island + 1);
    g.crossPrev = pick(cross, g.island - 1);
  }
  return g;
}

std::vector<int> crossGroup(const topo::IslandMap& m, int q) {
  std::vector<int> group;
  group.reserve(m.members.size());
  for (const auto& mem : m.members) group.push_back(mem[static_cast<size_t>(q)]);
  return group;
}

std::vector<int> hostedBlocks(const topo::IslandMap& m, int j, int q, int L) {
  const std::vector<int>& mem = m.members[static_cast<size_t>(j)];
  std::vector<int> out;
  for (size_t e = static_cast<size_t>(q); e < mem.size(); e += static_cast<size_t>(L)) out.push_back(mem[e]);
  return out;
}

std::vector<int> islandPiece(const topo::IslandMap& m, int i, int e, int L) {
  const int own = m.members[static_cast<size_t>(i)][static_cast<size_t>(e)];
  std::vector<int> out{own};
  if (e >= L) return out;
  for (int j = 0; j < static_cast<int>(m.members.size()); ++j)
    if (j != i) {
      std::vector<int> h = hostedBlocks(m, j, e, L);
      out.insert(out.end(), h.begin(), h.end());
    }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace atl::algo
