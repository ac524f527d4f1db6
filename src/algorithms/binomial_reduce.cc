// Binomial-tree reduce: the broadcast's tree run backwards (ceil(log2 n) rounds instead of the
// chain's n-1). A rank folds its children into its own input, smallest subtree first (those
// finish first), and passes the result to its parent, so the root holds
// x_root op S(child 1) op S(child 2) op ... in an order fixed by (n, root) alone: a call repeated
// with the same shape gives the same bits.
//
// Pipelined in chunks of spec.chunkElems, like the chain reduce: an inner rank sends chunk j-1 up
// while the first child's chunk j arrives. It accumulates in two scratch slots, used in turn, so
// the slot being sent is never the one being written; the root accumulates in its receive buffer
// and leaves send straight from their input.
//
// One program on channel 0; its links to parent and children are made on first use (core/connect.h).
#include "algorithms/binomial.h"

namespace atl::algo {

Schedule binomialReduce(const CollSpec& s) {
  Schedule out;
  if (s.count == 0) return out;
  Program prog;
  prog.channel = 0;
  if (s.nranks == 1) {
    if (!s.inPlace) addCopy(prog, sendAt(0), recvAt(0), s.count);
    out.programs.push_back(std::move(prog));
    return out;
  }
  BinomialNode node = binomialNode(s);
  std::vector<int> kids(node.children.rbegin(), node.children.rend());  // smallest subtree first
  const size_t chunk = std::min(std::max<size_t>(s.chunkElems, 1), s.count);
  const size_t nchunks = (s.count + chunk - 1) / chunk;
  auto piece = [&](size_t j) { return chunkOf(s.count, chunk, j); };
  if (kids.empty()) {
    for (size_t j = 0; j < nchunks; ++j) addTransfer(prog, node.parent, sendAt(piece(j).offset), piece(j).count, -1, {}, 0);
  } else if (node.parent < 0) {
    for (size_t j = 0; j < nchunks; ++j)
      for (size_t i = 0; i < kids.size(); ++i)
        addTransfer(prog, -1, {}, 0, kids[i], recvAt(piece(j).offset), piece(j).count, /*reduce=*/true,
                    i == 0 ? sendAt(piece(j).offset) : recvAt(piece(j).offset));
  } else {
    out.scratchElems = nchunks > 1 ? 2 * chunk : chunk;
    auto slot = [&](size_t j) { return scratchAt((j % 2) * chunk); };
    for (size_t j = 0; j <= nchunks; ++j) {
      const Span up = j > 0 ? piece(j - 1) : Span{0, 0};
      const Span in = j < nchunks ? piece(j) : Span{0, 0};
      addTransfer(prog, j > 0 ? node.parent : -1, slot(j + 1), up.count, j < nchunks ? kids[0] : -1, slot(j), in.count,
                  /*reduce=*/true, sendAt(in.offset));
      for (size_t i = 1; i < kids.size() && j < nchunks; ++i)
        addTransfer(prog, -1, {}, 0, kids[i], slot(j), in.count, /*reduce=*/true, slot(j));
    }
  }
  out.programs.push_back(std::move(prog));
  return out;
}

}  // namespace atl::algo
