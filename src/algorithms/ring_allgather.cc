// Ring all-gather: each rank places its block, then forwards the block it received last step.
#include "algorithms/ring.h"

namespace atl::algo {

Schedule ringAllGather(const CollSpec& s) {
  Schedule out;
  const int n = s.nranks, p = s.rank;
  const size_t block = s.count;
  const int nch = channelsFor(block * static_cast<size_t>(n), s.nchannels, s.chunkElems * static_cast<size_t>(n));
  for (int c = 0; c < nch && block > 0; ++c) {
    Span seg = evenSplit(block, nch, c);
    Program prog;
    prog.channel = c;
    auto at = [&](int k) { return recvAt(static_cast<size_t>(mod(k, n)) * block + seg.offset); };
    if (!s.inPlace) addCopy(prog, sendAt(seg.offset), at(p), seg.count);
    for (int t = 0; t < n - 1; ++t)
      addTransfer(prog, ringNext(s), at(p - t), seg.count, ringPrev(s), at(p - t - 1), seg.count);
    out.programs.push_back(std::move(prog));
  }
  return out;
}

}  // namespace atl::algo
