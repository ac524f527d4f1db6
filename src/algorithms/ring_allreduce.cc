// Ring all-reduce: reduce-scatter then all-gather around the ring, n-1 steps each. Every chunk is
// reduced by exactly one chain of ranks and then copied, so all ranks end bitwise identical.
#include "algorithms/ring.h"

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
    } else {
      auto chunk = [&](int k) { return evenSplit(seg.count, n, mod(k, n)); };
      // Reduce-scatter: at step t rank p forwards chunk p-t and folds chunk p-t-1 into its output.
      for (int t = 0; t < n - 1; ++t) {
        Span snd = chunk(p - t), rcv = chunk(p - t - 1);
        Ref src = t == 0 ? sendAt(seg.offset + snd.offset) : recvAt(seg.offset + snd.offset);
        addTransfer(prog, ringNext(s), src, snd.count, ringPrev(s), recvAt(seg.offset + rcv.offset), rcv.count,
                    /*reduce=*/true, sendAt(seg.offset + rcv.offset));
      }
      // All-gather: rank p now owns the final chunk p+1 and passes finished chunks along.
      for (int t = 0; t < n - 1; ++t) {
        Span snd = chunk(p + 1 - t), rcv = chunk(p - t);
        addTransfer(prog, ringNext(s), recvAt(seg.offset + snd.offset), snd.count, ringPrev(s),
                    recvAt(seg.offset + rcv.offset), rcv.count);
      }
    }
    out.programs.push_back(std::move(prog));
  }
  return out;
}

}  // namespace atl::algo
