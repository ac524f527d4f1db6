// Hierarchical all-reduce over islands (fast links inside, slow ones between): reduce-scatter
// inside each island, all-reduce each block across islands between the ranks holding it, then
// all-gather inside the island. Only 1/L of the buffer crosses island boundaries per rank.
//
// Islands may differ in size. The buffer is cut into L blocks, L the smallest island size; in
// every island the members at local index q < L form the ring, and a member at index e >= L
// ("extra") first hands its input to member e mod L and gets the result back at the end. Block
// boundaries are thus the same in every island, and local index q owns block (q+1) mod L
// everywhere after the ring reduce-scatter, so the cross-island groups line up.
//
// Bitwise identical everywhere: extras are folded by one rank, each ring chunk is combined by one
// chain, recursive doubling has both partners combine the same pair, and the rest is copies.
// Channel 0 only: island rings are not the global ring, and with NCCL_RUNTIME_CONNECT=0 only
// channels 0 and 1 link every pair at init (core/connect.h).
#include <algorithm>
#include <bit>
#include <vector>

#include "algorithms/hier_groups.h"
#include "algorithms/ring.h"

namespace atl::algo {
namespace {

/// Ring reduce-scatter of `seg` over `group` (this rank at position q): afterwards chunk q+1 of
/// seg is final in the receive buffer. Inputs are read from `input` at the same offsets.
void groupReduceScatter(Program& prog, const std::vector<int>& group, int q, Span seg, BufId input) {
  const int g = static_cast<int>(group.size());
  const int next = group[static_cast<size_t>(mod(q + 1, g))], prev = group[static_cast<size_t>(mod(q - 1, g))];
  auto chunk = [&](int k) { Span c = evenSplit(seg.count, g, mod(k, g)); return Span{seg.offset + c.offset, c.count}; };
  for (int t = 0; t < g - 1; ++t) {
    Span snd = chunk(q - t), rcv = chunk(q - t - 1);
    addTransfer(prog, next, Ref{t == 0 ? input : kRecvBuf, snd.offset}, snd.count, prev, recvAt(rcv.offset),
                rcv.count, /*reduce=*/true, Ref{input, rcv.offset});
  }
}

/// Ring all-gather of `seg` over `group` where position q holds chunk q+1 in the receive buffer.
void groupAllGather(Program& prog, const std::vector<int>& group, int q, Span seg) {
  const int g = static_cast<int>(group.size());
  const int next = group[static_cast<size_t>(mod(q + 1, g))], prev = group[static_cast<size_t>(mod(q - 1, g))];
  auto chunk = [&](int k) { Span c = evenSplit(seg.count, g, mod(k, g)); return Span{seg.offset + c.offset, c.count}; };
  for (int t = 0; t < g - 1; ++t) {
    Span snd = chunk(q + 1 - t), rcv = chunk(q - t);
    addTransfer(prog, next, recvAt(snd.offset), snd.count, prev, recvAt(rcv.offset), rcv.count);
  }
}

/// All-reduce of `blk` (already in the receive buffer) across `group`, this rank at position q.
void groupAllReduce(Schedule& out, Program& prog, const std::vector<int>& group, int q, Span blk, size_t chunkElems) {
  const int g = static_cast<int>(group.size());
  if (blk.count == 0 || g == 1) return;
  const bool pow2 = std::has_single_bit(static_cast<unsigned>(g));
  if (pow2 && (g == 2 || blk.count <= chunkElems * static_cast<size_t>(g))) {
    // Recursive doubling: a step must not write what it sends, so totals alternate between two
    // scratch halves and only the last level writes the receive buffer.
    const int levels = std::countr_zero(static_cast<unsigned>(g));
    out.scratchElems = std::max(out.scratchElems, 2 * blk.count);
    Ref total = recvAt(blk.offset);
    if (levels == 1) {
      addCopy(prog, total, scratchAt(0), blk.count);
      total = scratchAt(0);
    }
    for (int k = 0; k < levels; ++k) {
      const int partner = group[static_cast<size_t>(q ^ (1 << k))];
      Ref next = k == levels - 1 ? recvAt(blk.offset) : scratchAt(static_cast<size_t>(k % 2) * blk.count);
      addTransfer(prog, partner, total, blk.count, partner, next, blk.count, /*reduce=*/true, total);
      total = next;
    }
    return;
  }
  // Ring: the block is final in the receive buffer at this rank's chunk q+1 after the first half.
  groupReduceScatter(prog, group, q, blk, kRecvBuf);
  groupAllGather(prog, group, q, blk);
}

}  // namespace

Schedule hierAllReduce(const CollSpec& s) {
  if (!usableIslands(s)) return ringAllReduce(s);
  Schedule out;
  if (s.count == 0) return out;
  const topo::IslandMap& m = *s.islands;
  const int p = s.rank;
  const IslandPlace place = placeOf(m, p);
  const std::vector<int>& mine = m.members[static_cast<size_t>(place.island)];
  const int L = place.smallest, size = static_cast<int>(mine.size()), local = place.local;
  Program prog;
  prog.channel = 0;
  if (local >= L) {
    const int host = mine[static_cast<size_t>(local % L)];
    addTransfer(prog, host, sendAt(0), s.count, -1, {}, 0);
    addTransfer(prog, -1, {}, 0, host, recvAt(0), s.count);
    out.programs.push_back(std::move(prog));
    return out;
  }
  BufId input = kSendBuf;
  std::vector<int> extras;
  for (int e = local + L; e < size; e += L) extras.push_back(mine[static_cast<size_t>(e)]);
  for (int e : extras) {
    addTransfer(prog, -1, {}, 0, e, recvAt(0), s.count, /*reduce=*/true, Ref{input, 0});
    input = kRecvBuf;
  }
  const std::vector<int> ring(mine.begin(), mine.begin() + L);
  const Span whole{0, s.count};
  if (L == 1) {
    if (input == kSendBuf && !s.inPlace) addCopy(prog, sendAt(0), recvAt(0), s.count);
  } else {
    groupReduceScatter(prog, ring, local, whole, input);
  }
  Span blk = evenSplit(s.count, L, mod(local + 1, L));
  groupAllReduce(out, prog, crossGroup(m, local), place.island, blk, std::max<size_t>(1, s.chunkElems));
  if (L > 1) groupAllGather(prog, ring, local, whole);
  for (int e : extras) addTransfer(prog, e, recvAt(0), s.count, -1, {}, 0);
  out.programs.push_back(std::move(prog));
  return out;
}

}  // namespace atl::algo
