// Recursive-doubling all-reduce: at level k every rank swaps its running total with partner
// rank ^ 2^k and folds in what it receives. log2(n) hops instead of the ring's 2(n-1), at the price
// of moving the whole buffer at every hop, which is what small messages want.
//
// All ranks end bitwise identical: at each level both partners combine the same two partial
// results, and every operator is commutative.
//
// A step sends its running total while the executor writes the step's result slice by slice, so
// the two must not share memory: totals alternate between two scratch halves and only the last
// level writes the receive buffer. With one level and in-place buffers the input is copied to
// scratch first, for the same reason.
//
// One channel: the messages are small (links are made on first use, core/connect.h;
// with NCCL_RUNTIME_CONNECT=0 channels 0 and 1 link every pair at init, the others ring neighbours).
#include <bit>

#include "algorithms/ring.h"

namespace atl::algo {

Schedule rdAllReduce(const CollSpec& s) {
  Schedule out;
  const int n = s.nranks, p = s.rank;
  const int levels = std::countr_zero(static_cast<unsigned>(n));
  if (s.count == 0) return out;
  if (levels == 1) out.scratchElems = s.inPlace ? s.count : 0;
  else if (levels == 2) out.scratchElems = s.count;
  else if (levels > 2) out.scratchElems = 2 * s.count;
  Program prog;
  prog.channel = 0;
  if (n == 1) {
    addCopy(prog, sendAt(0), recvAt(0), s.count);
  } else {
    Ref total = sendAt(0);
    if (levels == 1 && s.inPlace) {
      addCopy(prog, total, scratchAt(0), s.count);
      total = scratchAt(0);
    }
    for (int k = 0; k < levels; ++k) {
      const int partner = p ^ (1 << k);
      Ref next = k == levels - 1 ? recvAt(0) : scratchAt(static_cast<size_t>(k % 2) * s.count);
      addTransfer(prog, partner, total, s.count, partner, next, s.count, /*reduce=*/true, total);
      total = next;
    }
  }
  out.programs.push_back(std::move(prog));
  return out;
}

}  // namespace atl::algo
