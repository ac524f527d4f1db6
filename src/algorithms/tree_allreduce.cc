// Double binary tree all-reduce (as NCCL does it): each half of the buffer is reduced up one
// binary tree to its root and broadcast back down, in chunks of spec.chunkElems so the levels
// overlap. Depth log2(n) instead of the ring's n-1, while the two trees together keep every rank's
// links busy: a rank that is an inner node of one tree is a leaf of the other.
//
// Tree shape: 1-based positions i = 1..n; the lowest set bit of i gives its height, odd i are
// leaves and the root is the highest power of two <= n. Tree 0 puts rank r at position r + 1,
// tree 1 shifts by one (rank r at position r, rank 0 at n), which turns tree 0's inner nodes
// (odd ranks) into leaves.
//
// Bitwise identical everywhere: each chunk is combined once, up the tree, and the root's value is
// copied down. Phases are not overlapped with each other (a rank finishes sending up before it
// listens for the way down), which keeps one program per tree and every link used in one
// direction per phase.
//
// Tree 1 runs on channel 1, which, like channel 0, links every pair at init under
// NCCL_RUNTIME_CONNECT=0 (core/connect.h; on demand only the tree edges are linked).
#include <algorithm>
#include <bit>
#include <vector>

#include "algorithms/ring.h"
#include "algorithms/tree_shape.h"

namespace atl::algo {
namespace {

/// Neighbours of position i (1-based) in the in-order binary tree over 1..n, as positions.
TreeNode positionNode(int i, int n) {
  TreeNode t;
  const int low = i & -i;
  const int root = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
  if (i != root) {
    int p = i, l = low;
    do {  // climb past positions beyond n
      p = (p & (2 * l)) ? p - l : p + l;
      l *= 2;
    } while (p > n);
    t.parent = p;
  }
  if (low > 1) {
    t.child[0] = i - low / 2;
    int h = low / 2;
    while (h >= 1 && i + h > n) h /= 2;
    if (h >= 1) t.child[1] = i + h;
  }
  return t;
}

void treeProgram(Program& prog, const TreeNode& t, Span seg, size_t chunkElems) {
  const size_t nchunks = (seg.count + chunkElems - 1) / chunkElems;
  auto chunk = [&](size_t k) { return Span{seg.offset + k * chunkElems, std::min(chunkElems, seg.count - k * chunkElems)}; };
  const int c0 = t.child[0], c1 = t.child[1];
  const bool inner = c0 >= 0;
  // Up: fold the children into the receive buffer, forwarding the previous chunk meanwhile.
  for (size_t k = 0; k <= nchunks; ++k) {
    const bool fresh = k < nchunks;
    Span now = fresh ? chunk(k) : Span{0, 0}, prev = k > 0 ? chunk(k - 1) : Span{0, 0};
    Ref up = inner ? recvAt(prev.offset) : sendAt(prev.offset);
    addTransfer(prog, t.parent, up, prev.count, c0, recvAt(now.offset), now.count, /*reduce=*/true,
                sendAt(now.offset));
    addTransfer(prog, -1, {}, 0, c1, recvAt(now.offset), now.count, /*reduce=*/true, recvAt(now.offset));
  }
  if (!inner && t.parent < 0) return;
  // Down: take each finished chunk from the parent and pass the previous one to the children.
  for (size_t k = 0; k <= nchunks; ++k) {
    Span now = k < nchunks ? chunk(k) : Span{0, 0}, prev = k > 0 ? chunk(k - 1) : Span{0, 0};
    addTransfer(prog, c0, recvAt(prev.offset), prev.count, t.parent, recvAt(now.offset), now.count);
    addTransfer(prog, c1, recvAt(prev.offset), prev.count, -1, {}, 0);
  }
}

}  // namespace

TreeNode treeNode(int rank, int n, int tree) {
  auto toPos = [&](int r) { return tree == 0 ? r + 1 : (r == 0 ? n : r); };
  auto toRank = [&](int pos) { return pos < 0 ? -1 : (tree == 0 ? pos - 1 : pos % n); };
  TreeNode t = positionNode(toPos(rank), n);
  return {toRank(t.parent), {toRank(t.child[0]), toRank(t.child[1])}};
}

Schedule treeAllReduce(const CollSpec& s) {
  Schedule out;
  const int n = s.nranks;
  if (s.count == 0) return out;
  const size_t chunkElems = std::max<size_t>(1, s.chunkElems);
  const int ntrees = s.count >= 2 ? treeCount(n, s.nchannels) : 1;
  for (int tr = 0; tr < ntrees; ++tr) {
    Program prog;
    prog.channel = tr;
    Span seg = evenSplit(s.count, ntrees, tr);
    if (n == 1) {
      addCopy(prog, sendAt(seg.offset), recvAt(seg.offset), seg.count);
    } else if (n == 2) {
      // One hop each way: both ranks combine the same pair.
      const int peer = 1 - s.rank;
      if (s.inPlace) {
        out.scratchElems = s.count;
        addCopy(prog, sendAt(0), scratchAt(0), s.count);
        addTransfer(prog, peer, scratchAt(0), s.count, peer, recvAt(0), s.count, true, scratchAt(0));
      } else {
        addTransfer(prog, peer, sendAt(0), s.count, peer, recvAt(0), s.count, true, sendAt(0));
      }
    } else {
      treeProgram(prog, treeNode(s.rank, n, tr), seg, chunkElems);
    }
    out.programs.push_back(std::move(prog));
  }
  return out;
}

}  // namespace atl::algo
