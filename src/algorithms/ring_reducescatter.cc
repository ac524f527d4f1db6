// Ring reduce-scatter: partial sums travel around the ring and land, complete, on their owner.
// Intermediate partials live in two scratch slots per channel (one being sent, one being filled).
#include "algorithms/ring.h"

namespace atl::algo {

Schedule ringReduceScatter(const CollSpec& s) {
  Schedule out;
  const int n = s.nranks, p = s.rank;
  const size_t block = s.count;
  const int nch = channelsFor(block * static_cast<size_t>(n), s.nchannels, s.chunkElems * static_cast<size_t>(n));
  if (n > 2) out.scratchElems = 2 * block;
  for (int c = 0; c < nch && block > 0; ++c) {
    Span seg = evenSplit(block, nch, c);
    Program prog;
    prog.channel = c;
    if (n == 1) {
      if (!s.inPlace) addCopy(prog, sendAt(seg.offset), recvAt(seg.offset), seg.count);
      out.programs.push_back(std::move(prog));
      continue;
    }
    auto input = [&](int k) { return sendAt(static_cast<size_t>(mod(k, n)) * block + seg.offset); };
    auto slot = [&](int t) { return scratchAt(2 * seg.offset + static_cast<size_t>(t % 2) * seg.count); };
    for (int t = 0; t < n - 1; ++t) {
      Ref src = t == 0 ? input(p - 1) : slot(t - 1);
      bool last = t == n - 2;
      Ref dst = last ? recvAt(seg.offset) : slot(t);
      addTransfer(prog, ringNext(s), src, seg.count, ringPrev(s), dst, seg.count, /*reduce=*/true, input(p - t - 2));
    }
    out.programs.push_back(std::move(prog));
  }
  return out;
}

}  // namespace atl::algo
