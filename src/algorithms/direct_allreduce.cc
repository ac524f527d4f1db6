// One-shot all-reduce for tiny messages: every rank sends its whole input to every peer (one hop,
// n-1 messages out and in), then folds the n inputs locally in rank order. Every rank runs the same
// chain ((x0 op x1) op x2) ..., so the results agree bitwise without a second exchange.
//
// Peer offsets i = 1..n-1 pair each send with a receive from the opposite side, as in AlltoAll, so
// the exchange cannot wait on itself. Received inputs land in per-rank scratch slots; in place the
// own input is copied aside too, since the chain writes the receive buffer before it reads it.
// Channel 0 only: with NCCL_RUNTIME_CONNECT=0 it links every pair at init (core/connect.h).
#include "algorithms/ring.h"

namespace atl::algo {

Schedule directAllReduce(const CollSpec& s) {
  Schedule out;
  const int n = s.nranks, p = s.rank;
  const size_t c = s.count;
  if (c == 0) return out;
  Program prog;
  prog.channel = 0;
  if (n == 1) {
    addCopy(prog, sendAt(0), recvAt(0), c);
    out.programs.push_back(std::move(prog));
    return out;
  }
  out.scratchElems = c * static_cast<size_t>(n);
  auto slot = [&](int r) { return scratchAt(static_cast<size_t>(r) * c); };
  auto input = [&](int r) { return r == p && !s.inPlace ? sendAt(0) : slot(r); };
  if (s.inPlace) addCopy(prog, sendAt(0), slot(p), c);
  for (int i = 1; i < n; ++i) {
    const int to = mod(p + i, n), from = mod(p - i, n);
    addTransfer(prog, to, sendAt(0), c, from, slot(from), c);
  }
  addLocalReduce(prog, input(0), input(1), recvAt(0), c);
  for (int r = 2; r < n; ++r) addLocalReduce(prog, recvAt(0), input(r), recvAt(0), c);
  out.programs.push_back(std::move(prog));
  return out;
}

}  // namespace atl::algo
