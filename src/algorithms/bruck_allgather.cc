// Bruck all-gather: ceil(log2 n) rounds for any n, against the ring's n-1, for latency-bound
// sizes. Rank p keeps the blocks it has in rank order starting from its own, T[i] = block of
// p + i (mod n); at round k (distance d = 2^k) it sends its first min(d, n-d) blocks to p - d and
// receives p + d's first ones as T[d...]. The same bytes cross as in the ring, (n-1)/n of the
// output per rank, in fewer and larger messages.
//
// T is contiguous so every round is one message each way; it lives in scratch and a final local
// rotation (two copies) puts block p + i at its place in the output. Rank 0's T is already in
// output order, so it builds T in its receive buffer and skips the rotation.
//
// One program on channel 0: the messages are small, and every round talks to different peers (its
// ceil(log2 n) links each way are made on first use, core/connect.h).
#include "algorithms/ring.h"

namespace atl::algo {

Schedule bruckAllGather(const CollSpec& s) {
  Schedule out;
  const int n = s.nranks, p = s.rank;
  const size_t block = s.count;
  if (block == 0) return out;
  Program prog;
  prog.channel = 0;
  auto blocks = [&](int k) { return static_cast<size_t>(k) * block; };
  const BufId table = p == 0 ? kRecvBuf : kScratchBuf;
  if (table == kScratchBuf) out.scratchElems = blocks(n);
  // In place, rank 0's own block already sits at T[0] (the start of its receive buffer).
  if (!(table == kRecvBuf && s.inPlace)) addCopy(prog, sendAt(0), Ref{table, 0}, block);
  for (int d = 1; d < n; d *= 2) {
    const size_t len = blocks(std::min(d, n - d));
    addTransfer(prog, mod(p - d, n), Ref{table, 0}, len, mod(p + d, n), Ref{table, blocks(d)}, len);
  }
  if (table == kScratchBuf) {
    addCopy(prog, scratchAt(0), recvAt(blocks(p)), blocks(n - p));
    addCopy(prog, scratchAt(blocks(n - p)), recvAt(0), blocks(p));
  }
  out.programs.push_back(std::move(prog));
  return out;
}

}  // namespace atl::algo
