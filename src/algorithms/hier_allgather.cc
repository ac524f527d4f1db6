// Hierarchical all-gather over islands: first a ring across islands among the ranks of one local
// index, then a ring inside each island passing on what each member gathered. A rank sends only
// islands-1 blocks across island boundaries, where the ring sends up to n-1.
//
// Uneven islands (L the smallest size): each extra hands its block to its host first, the host
// carries all of them in the cross-island ring, and the in-island ring runs over every member with
// the pieces of islandPiece (a host's gathered blocks, an extra's own block), which partition the
// ranks. A host receives its extras' blocks once more there; that costs one block per extra and
// keeps the island ring a plain ring.
//
// Channels 0 and 1 only: with NCCL_RUNTIME_CONNECT=0 they are the ones linking every pair at init,
// and neither ring is the global ring (on demand, any channel would do: core/connect.h).
#include <algorithm>
#include <vector>

#include "algorithms/hier_groups.h"
#include "algorithms/hier_pieces.h"
#include "algorithms/ring.h"

namespace atl::algo {

Schedule hierAllGather(const CollSpec& s) {
  if (!usableIslands(s)) return ringAllGather(s);
  Schedule out;
  const size_t block = s.count;
  if (block == 0) return out;
  const topo::IslandMap& m = *s.islands;
  const auto [n, p, i, e, size, L, nIslands, host, nch, merge, islandNext, islandPrev, crossNext, crossPrev, mine] =
      blockRings(s);

  std::vector<std::vector<BlockRun>> islandRuns, crossRuns;
  for (int k = 0; k < size; ++k) islandRuns.push_back(runsOf(islandPiece(m, i, k, L), merge));
  if (host)
    for (int j = 0; j < nIslands; ++j) crossRuns.push_back(runsOf(hostedBlocks(m, j, e, L), merge));
  const BlockSpace output{kRecvBuf, 0, nullptr};

  for (int c = 0; c < nch; ++c) {
    const Span seg = evenSplit(block, nch, c);
    Program prog;
    prog.channel = c;
    if (!s.inPlace) addCopy(prog, sendAt(seg.offset), output.at(p, block, seg), seg.count);
    if (!host) {
      addTransfer(prog, mine[static_cast<size_t>(e % L)], sendAt(seg.offset), seg.count, -1, {}, 0);
    } else {
      for (int x = e + L; x < size; x += L) {
        const int extra = mine[static_cast<size_t>(x)];
        addTransfer(prog, -1, {}, 0, extra, output.at(extra, block, seg), seg.count);
      }
      for (int t = 0; t < nIslands - 1; ++t)
        exchangeRuns(prog, crossNext, crossRuns[static_cast<size_t>(mod(i - t, nIslands))], output, crossPrev,
                     crossRuns[static_cast<size_t>(mod(i - t - 1, nIslands))], output, block, seg);
    }
    for (int t = 0; t < size - 1; ++t)
      exchangeRuns(prog, islandNext, islandRuns[static_cast<size_t>(mod(e - t, size))], output, islandPrev,
                   islandRuns[static_cast<size_t>(mod(e - t - 1, size))], output, block, seg);
    out.programs.push_back(std::move(prog));
  }
  return out;
}

}  // namespace atl::algo
