// Binomial-tree broadcast: ceil(log2 n) rounds instead of the chain's n-1, for latency-bound
// sizes at many ranks. Every inner rank sends the whole buffer once per child, so the root sends
// it ceil(log2 n) times: past a few hundred KiB the chain, which sends it once, wins (the cost
// model prices both, tuning/cost_model.cc).
//
// Pipelined in chunks of spec.chunkElems: a rank forwards chunk j to each child while the next
// chunk arrives, receiving it in the same step as the send to its last child (pairing it with the
// first would hold the other children's sends until the next chunk is in). A large broadcast
// so streams through the tree instead of being stored and forwarded whole at every level, and a
// rank's sends of one chunk to its children are in flight together. With one chunk (the sizes the
// selector picks it for) it is the plain binomial tree: the root's i-th send is round i.
//
// One program on channel 0; its links to parent and children are made on first use (core/connect.h).
#include "algorithms/binomial.h"

namespace atl::algo {

Schedule binomialBroadcast(const CollSpec& s) {
  Schedule out;
  if (s.count == 0) return out;
  const BinomialNode node = binomialNode(s);
  const size_t chunk = std::max<size_t>(s.chunkElems, 1);
  const size_t nchunks = (s.count + chunk - 1) / chunk;
  const bool root = node.parent < 0;
  // The root sends straight from its input; everyone else forwards what it received.
  const BufId from = root ? kSendBuf : kRecvBuf;
  Program prog;
  prog.channel = 0;
  if (root && !s.inPlace) addCopy(prog, sendAt(0), recvAt(0), s.count);
  if (!root) {
    const Span first = chunkOf(s.count, chunk, 0);
    addTransfer(prog, -1, {}, 0, node.parent, recvAt(first.offset), first.count);
  }
  for (size_t j = 0; j < nchunks; ++j) {
    const Span now = chunkOf(s.count, chunk, j);
    const bool pull = !root && j + 1 < nchunks;  // the next chunk still has to come from the parent
    const Span next = pull ? chunkOf(s.count, chunk, j + 1) : Span{0, 0};
    if (node.children.empty()) {
      addTransfer(prog, -1, {}, 0, pull ? node.parent : -1, recvAt(next.offset), next.count);
      continue;
    }
    for (size_t i = 0; i < node.children.size(); ++i) {
      const bool last = i + 1 == node.children.size();
      addTransfer(prog, node.children[i], Ref{from, now.offset}, now.count, last && pull ? node.parent : -1,
                  recvAt(next.offset), last ? next.count : 0);
    }
  }
  out.programs.push_back(std::move(prog));
  return out;
}

}  // namespace atl::algo
