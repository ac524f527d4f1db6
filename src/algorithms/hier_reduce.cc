// Hierarchical reduce, the mirror of hier_broadcast.cc: each island's chain folds its inputs in
// towards the island's leader, and the leaders' chain folds the island sums in towards the root.
// Every element is combined in one fixed order: a rank takes its input, then what its island
// chain brought, then what the leader chain brought.
//
// A leader receives twice per chunk; it sends the previous chunk on while the slow leader-chain
// message arrives, and takes the island's message first. Its partials live in per-channel scratch:
// one slot for input (op) island, two alternating for the chunk it is sending and the one it is
// filling. Islands of any size work.
#include <algorithm>
#include <vector>

#include "algorithms/hier_chain.h"
#include "algorithms/hier_groups.h"
#include "algorithms/ring.h"

namespace atl::algo {

Schedule hierReduce(const CollSpec& s) {
  if (!usableIslands(s)) return chainReduce(s);
  Schedule out;
  if (s.count == 0) return out;
  const HierChain chain = hierChain(s);
  const bool isRoot = s.rank == s.root;
  const int to = isRoot ? -1 : chain.leaderPrev >= 0 ? chain.leaderPrev : chain.islandPrev;
  std::vector<int> from;  // in combination order
  for (int peer : {chain.islandNext, chain.leaderNext})
    if (peer >= 0) from.push_back(peer);
  const int nch = channelsFor(s.count, std::min(s.nchannels, 2), s.chunkElems);
  const size_t chunk = std::min(std::max<size_t>(s.chunkElems, 1), evenSplit(s.count, nch, 0).count);
  const bool staged = !from.empty() && (to >= 0 || from.size() > 1);
  if (staged) out.scratchElems = static_cast<size_t>(nch) * 3 * chunk;
  for (int c = 0; c < nch; ++c) {
    const Span seg = evenSplit(s.count, nch, c);
    Program prog;
    prog.channel = c;
    const size_t nchunks = (seg.count + chunk - 1) / chunk;
    auto piece = [&](size_t j) { return Span{seg.offset + j * chunk, std::min(chunk, seg.count - j * chunk)}; };
    const size_t base = static_cast<size_t>(c) * 3 * chunk;
    const Ref firstFold = scratchAt(base);
    auto sending = [&](size_t j) { return scratchAt(base + (1 + j % 2) * chunk); };
    if (from.empty()) {  // a chain's far end sends its input as it is
      for (size_t j = 0; j < nchunks; ++j) addTransfer(prog, to, sendAt(piece(j).offset), piece(j).count, -1, {}, 0);
      out.programs.push_back(std::move(prog));
      continue;
    }
    for (size_t j = 0; j <= nchunks; ++j) {
      const Span fwd = j > 0 ? piece(j - 1) : Span{0, 0}, in = j < nchunks ? piece(j) : Span{0, 0};
      const Ref done = isRoot ? recvAt(in.offset) : sending(j);
      for (size_t k = 0; k < from.size(); ++k) {
        const bool last = k + 1 == from.size();
        const Ref acc = k == 0 ? sendAt(in.offset) : firstFold;
        // The previous chunk leaves with the last receive of this one.
        addTransfer(prog, last ? to : -1, j > 0 ? sending(j - 1) : Ref{}, last ? fwd.count : 0, j < nchunks ? from[k] : -1,
                    last ? done : firstFold, in.count, /*reduce=*/true, acc);
      }
    }
    out.programs.push_back(std::move(prog));
  }
  return out;
}

}  // namespace atl::algo
