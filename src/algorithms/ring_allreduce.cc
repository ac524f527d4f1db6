// Ring all-reduce: reduce-scatter then all-gather around the ring, n-1 steps each. Every chunk is
// reduced by exactly one chain of ranks and then copied, so all ranks end bitwise identical.
#include "algorithms/ring.h"

#include <algorithm>

namespace atl::algo {

Schedule ringAllReduce(const CollSpec& s) {
  Schedule out;
  const int n = s.nranks, p = s.rank;
  const int nch = channelsFor(s.count, s.nchannels, s.chunkElems * static_cast<size_t>(n));
  for (int c = 0; c < nch && s.count > 0; ++c) {
    Span seg = evenSplit(s.count, nch, c);
    Program prog;
    prog.channel = c;
    if (n == 1) {
      addCopy(prog, sendAt(seg.offset), recvAt(seg.offset), seg.count);
      out.programs.push_back(std::move(prog));
      continue;
    }
    // Rounds of at most n slices, each reduce-scattered and all-gathered before the next: the
    // all-gather forwards a chunk the reduce-scatter has just written, while it is still in cache.
    // In one round of a segment larger than the cache it comes back from memory (shared memory
    // inside a host: perf/baselines/README.md).
    const size_t perRound = s.ringSliceElems * static_cast<size_t>(n);
    const size_t wanted = perRound == 0 ? 1 : (seg.count + perRound - 1) / perRound;
    const int rounds = static_cast<int>(std::min<size_t>(wanted, kMaxRingRounds));
    for (int r = 0; r < rounds; ++r) {
      const Span part = evenSplit(seg.count, rounds, r);
      const size_t base = seg.offset + part.offset;
      auto chunk = [&](int k) { return evenSplit(part.count, n, mod(k, n)); };
      // Reduce-scatter: at step t rank p forwards chunk p-t and folds chunk p-t-1 into its output.
      for (int t = 0; t < n - 1; ++t) {
        Span snd = chunk(p - t), rcv = chunk(p - t - 1);
        Ref src = t == 0 ? sendAt(base + snd.offset) : recvAt(base + snd.offset);
        addTransfer(prog, ringNext(s), src, snd.count, ringPrev(s), recvAt(base + rcv.offset), rcv.count,
                    /*reduce=*/true, sendAt(base + rcv.offset));
      }
      // All-gather: rank p now owns the final chunk p+1 and passes finished chunks along.
      for (int t = 0; t < n - 1; ++t) {
        Span snd = chunk(p + 1 - t), rcv = chunk(p - t);
        addTransfer(prog, ringNext(s), recvAt(base + snd.offset), snd.count, ringPrev(s), recvAt(base + rcv.offset),
                    rcv.count);
      }
    }
    out.programs.push_back(std::move(prog));
  }
  return out;
}

}  // namespace atl::algo
