// Hierarchical reduce-scatter, the mirror of hier_allgather.cc: a ring inside each island leaves
// each member with the island's partial sums of the blocks its cross-island group owns, then a
// ring across islands among equal local indices completes each rank's own block. A rank sends
// only islands-1 blocks across island boundaries.
//
// Uneven islands: the in-island ring runs over every member with the pieces of islandPiece; an
// extra ends with the island partial of its own block, hands it to its host, and gets the final
// block back after the cross-island ring.
//
// Scratch per rank: two slots of the largest island piece (ring partials alternate between them so
// a step never writes what it sends), the host's cross-island inputs (dense, in rank order) and
// two slots of its largest cross-island piece. Each element is combined by one chain of ranks, so
// its combination order is fixed.
#include <algorithm>
#include <vector>

#include "algorithms/hier_groups.h"
#include "algorithms/hier_pieces.h"
#include "algorithms/ring.h"

namespace atl::algo {

Schedule hierReduceScatter(const CollSpec& s) {
  if (!usableIslands(s)) return ringReduceScatter(s);
  Schedule out;
  const size_t block = s.count;
  if (block == 0) return out;
  const topo::IslandMap& m = *s.islands;
  const auto [n, p, i, e, size, L, nIslands, host, nch, merge, islandNext, islandPrev, crossNext, crossPrev, mine] =
      blockRings(s);

  std::vector<std::vector<int>> pieces;
  std::vector<std::vector<BlockRun>> pieceRuns;
  size_t widest = 0;
  for (int k = 0; k < size; ++k) {
    pieces.push_back(islandPiece(m, i, k, L));
    pieceRuns.push_back(runsOf(pieces.back(), merge));
    widest = std::max(widest, pieces.back().size());
  }
  std::vector<std::vector<int>> hosted;  // per island: the blocks this host's cross group owns there
  std::vector<std::vector<BlockRun>> hostedRuns;
  std::vector<int> inputs;  // what this host feeds into the cross-island ring, ascending
  size_t widestHosted = 0;
  if (host) {
    for (int j = 0; j < nIslands; ++j) {
      hosted.push_back(hostedBlocks(m, j, e, L));
      hostedRuns.push_back(runsOf(hosted.back(), merge));
      widestHosted = std::max(widestHosted, hosted.back().size());
      inputs.insert(inputs.end(), hosted.back().begin(), hosted.back().end());
    }
    std::sort(inputs.begin(), inputs.end());
  }
  const bool hasExtras = host && hosted[static_cast<size_t>(i)].size() > 1;
  // Scratch only where a ring keeps partials: rings of two go straight from inputs to results.
  const size_t pieceSlot = size > 2 ? widest * block : 0;
  const size_t crossSlot = nIslands > 2 || hasExtras ? widestHosted * block : 0;
  const size_t inputsBase = 2 * pieceSlot, crossBase = inputsBase + (size > 1 ? inputs.size() * block : 0);
  out.scratchElems = crossBase + 2 * crossSlot;
  const BlockSpace input{kSendBuf, 0, nullptr};
  // A one-member island has no in-island ring: its partials are its inputs.
  const BlockSpace crossInput = size > 1 ? BlockSpace{kScratchBuf, inputsBase, &inputs} : input;

  for (int c = 0; c < nch; ++c) {
    const Span seg = evenSplit(block, nch, c);
    Program prog;
    prog.channel = c;
    for (int t = 0; t < size - 1; ++t) {
      const size_t x = static_cast<size_t>(mod(e - t - 1, size)), y = static_cast<size_t>(mod(e - t - 2, size));
      const BlockSpace from =
          t == 0 ? input : BlockSpace{kScratchBuf, static_cast<size_t>((t - 1) % 2) * pieceSlot, &pieces[x]};
      BlockSpace to{kScratchBuf, static_cast<size_t>(t % 2) * pieceSlot, &pieces[y]};
      if (t == size - 2) to = host ? crossInput : BlockSpace{kRecvBuf, 0, &pieces[y]};
      exchangeRuns(prog, islandNext, pieceRuns[x], from, islandPrev, pieceRuns[y], to, block, seg, &input);
    }
    if (!host) {
      const int h = mine[static_cast<size_t>(e % L)];
      addTransfer(prog, h, recvAt(seg.offset), seg.count, -1, {}, 0);
      addTransfer(prog, -1, {}, 0, h, recvAt(seg.offset), seg.count);
      out.programs.push_back(std::move(prog));
      continue;
    }
    for (int x = e + L; x < size; x += L) {
      const int extra = mine[static_cast<size_t>(x)];
      addTransfer(prog, -1, {}, 0, extra, crossInput.at(extra, block, seg), seg.count);
    }
    auto slot = [&](int t, size_t piece) {
      return BlockSpace{kScratchBuf, crossBase + static_cast<size_t>(t % 2) * crossSlot, &hosted[piece]};
    };
    for (int t = 0; t < nIslands - 1; ++t) {
      const size_t x = static_cast<size_t>(mod(i - t - 1, nIslands)), y = static_cast<size_t>(mod(i - t - 2, nIslands));
      const BlockSpace from = t == 0 ? crossInput : slot(t - 1, x);
      // The last step completes this island's piece: straight into the output unless extras share it.
      BlockSpace to = slot(t, y);
      if (t == nIslands - 2 && !hasExtras) to = BlockSpace{kRecvBuf, 0, &hosted[y]};
      exchangeRuns(prog, crossNext, hostedRuns[x], from, crossPrev, hostedRuns[y], to, block, seg, &crossInput);
    }
    if (hasExtras) {
      const BlockSpace done = slot(nIslands - 2, static_cast<size_t>(i));
      addCopy(prog, done.at(p, block, seg), recvAt(seg.offset), seg.count);
      for (int x = e + L; x < size; x += L) {
        const int extra = mine[static_cast<size_t>(x)];
        addTransfer(prog, extra, done.at(extra, block, seg), seg.count, -1, {}, 0);
      }
    }
    out.programs.push_back(std::move(prog));
  }
  return out;
}

}  // namespace atl::algo
