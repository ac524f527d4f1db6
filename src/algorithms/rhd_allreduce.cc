// Rabenseifner all-reduce: reduce-scatter by recursive halving, then all-gather by recursive
// doubling, over the largest power of two m <= n. 2·log2(m) hops moving about 2·count elements in
// all, so it sits between recursive doubling (few hops, whole buffer each) and the ring.
//
// Other rank counts fold first: of the first 2(n - m) ranks, each even one hands its input to its
// odd neighbour and gets the finished result back at the end.
//
// Bitwise identical everywhere: each halving level has exactly one rank combine each element
// (the one keeping that half), so every element's final value is computed once and then copied.
//
// The halves a step sends and writes are disjoint, so no scratch is needed, even in place.
// Channel 0 only: partners are not ring neighbours, and with NCCL_RUNTIME_CONNECT=0 only channels
// 0 and 1 link every pair at init (core/connect.h).
#include <algorithm>
#include <bit>
#include <vector>

#include "algorithms/ring.h"

namespace atl::algo {

Schedule rhdAllReduce(const CollSpec& s) {
  Schedule out;
  const int n = s.nranks, p = s.rank;
  if (s.count == 0) return out;
  Program prog;
  prog.channel = 0;
  if (n == 1) {
    addCopy(prog, sendAt(0), recvAt(0), s.count);
    out.programs.push_back(std::move(prog));
    return out;
  }
  const int m = static_cast<int>(std::bit_floor(static_cast<unsigned>(n)));
  const int folded = 2 * (n - m);
  // Virtual ranks 0..m-1: odd ranks below `folded` stand for their pair, the rest shift down.
  auto realRank = [&](int v) { return v < n - m ? 2 * v + 1 : v + (n - m); };
  if (p < folded && p % 2 == 0) {
    addTransfer(prog, p + 1, sendAt(0), s.count, -1, {}, 0);
    addTransfer(prog, -1, {}, 0, p + 1, recvAt(0), s.count);
    out.programs.push_back(std::move(prog));
    return out;
  }
  const int v = p < folded ? p / 2 : p - (n - m);
  BufId input = kSendBuf;  // where this rank's not yet halved data lives
  if (p < folded) {
    addTransfer(prog, -1, {}, 0, p - 1, recvAt(0), s.count, /*reduce=*/true, sendAt(0));
    input = kRecvBuf;
  }
  // Halving from the top bit: partners share all higher bits, hence the same segment.
  size_t lo = 0, hi = s.count;
  struct Level {
    int partner;
    Span mine, theirs;
  };
  std::vector<Level> levels;
  for (int mask = m / 2; mask >= 1; mask /= 2) {
    const int partner = realRank(v ^ mask);
    const size_t mid = lo + (hi - lo) / 2;
    Span lower{lo, mid - lo}, upper{mid, hi - mid};
    const bool keepLower = (v & mask) == 0;
    Span keep = keepLower ? lower : upper, give = keepLower ? upper : lower;
    addTransfer(prog, partner, Ref{input, give.offset}, give.count, partner, recvAt(keep.offset), keep.count,
                /*reduce=*/true, Ref{input, keep.offset});
    input = kRecvBuf;
    levels.push_back({partner, keep, give});
    lo = keep.offset, hi = keep.offset + keep.count;
  }
  // Doubling retraces the levels: what I kept is final, what I gave away comes back finished.
  for (size_t i = levels.size(); i-- > 0;) {
    const Level& l = levels[i];
    addTransfer(prog, l.partner, recvAt(l.mine.offset), l.mine.count, l.partner, recvAt(l.theirs.offset),
                l.theirs.count);
  }
  if (p < folded) addTransfer(prog, p - 1, recvAt(0), s.count, -1, {}, 0);
  out.programs.push_back(std::move(prog));
  return out;
}

}  // namespace atl::algo
