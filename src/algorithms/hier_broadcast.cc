// Hierarchical broadcast: the root streams chunks along a chain of island leaders, and every
// leader streams them on into its own island's chain. The last rank gets the first chunk after
// (islands-1)+(islandSize-1) hops instead of n-1, and island boundaries are crossed islands-1
// times whatever the island membership (a ring chain over strided islands crosses at every hop).
//
// A step has one send, so a leader forwards each chunk twice in turn: to the next leader while
// receiving the following chunk (the slow link first), then into its island. Islands of any size
// work: each island chain is independent of the others.
//
// Channels 0 and 1 only: with NCCL_RUNTIME_CONNECT=0 they are the ones linking every pair at init,
// and neither chain follows the ring (on demand, any channel would do: core/connect.h).
#include <algorithm>
#include <vector>

#include "algorithms/hier_groups.h"
#include "algorithms/hier_chain.h"
#include "algorithms/ring.h"

namespace atl::algo {

Schedule hierBroadcast(const CollSpec& s) {
  if (!usableIslands(s)) return chainBroadcast(s);
  Schedule out;
  if (s.count == 0) return out;
  const HierChain chain = hierChain(s);
  const bool isRoot = s.rank == s.root;
  const int from = chain.leaderPrev >= 0 ? chain.leaderPrev : chain.islandPrev;
  std::vector<int> to;
  for (int peer : {chain.leaderNext, chain.islandNext})
    if (peer >= 0) to.push_back(peer);
  const int nch = channelsFor(s.count, std::min(s.nchannels, 2), s.chunkElems);
  const size_t chunk = std::max<size_t>(s.chunkElems, 1);
  for (int c = 0; c < nch; ++c) {
    const Span seg = evenSplit(s.count, nch, c);
    Program prog;
    prog.channel = c;
    const size_t nchunks = (seg.count + chunk - 1) / chunk;
    auto piece = [&](size_t j) { return Span{seg.offset + j * chunk, std::min(chunk, seg.count - j * chunk)}; };
    if (isRoot) {
      if (!s.inPlace) addCopy(prog, sendAt(seg.offset), recvAt(seg.offset), seg.count);
      for (size_t j = 0; j < nchunks; ++j)
        for (int peer : to) addTransfer(prog, peer, sendAt(piece(j).offset), piece(j).count, -1, {}, 0);
    } else {
      for (size_t j = 0; j <= nchunks; ++j) {
        const Span fwd = j > 0 ? piece(j - 1) : Span{0, 0}, in = j < nchunks ? piece(j) : Span{0, 0};
        addTransfer(prog, to.empty() ? -1 : to[0], recvAt(fwd.offset), fwd.count, from, recvAt(in.offset), in.count);
        for (size_t k = 1; k < to.size(); ++k) addTransfer(prog, to[k], recvAt(fwd.offset), fwd.count, -1, {}, 0);
      }
    }
    out.programs.push_back(std::move(prog));
  }
  return out;
}

}  // namespace atl::algo
