// Pipelined chain broadcast along the ring from the root: each rank receives chunk j while it
// forwards chunk j-1, so the whole chain streams at link speed after n-1 chunk latencies.
#include <algorithm>

#include "algorithms/ring.h"

namespace atl::algo {

Schedule chainBroadcast(const CollSpec& s) {
  Schedule out;
  const int n = s.nranks;
  const int q = mod(s.rank - s.root, n);  // position in the chain; 0 is the root
  const int nch = channelsFor(s.count, s.nchannels, s.chunkElems);
  for (int c = 0; c < nch && s.count > 0; ++c) {
    Span seg = evenSplit(s.count, nch, c);
    Program prog;
    prog.channel = c;
    const size_t chunk = std::max<size_t>(s.chunkElems, 1);
    const size_t nchunks = (seg.count + chunk - 1) / chunk;
    auto piece = [&](size_t j) {
      size_t off = j * chunk;
      return Span{seg.offset + off, std::min(chunk, seg.count - off)};
    };
    if (q == 0) {
      if (!s.inPlace) addCopy(prog, sendAt(seg.offset), recvAt(seg.offset), seg.count);
      if (n > 1)
        for (size_t j = 0; j < nchunks; ++j) addTransfer(prog, ringNext(s), sendAt(piece(j).offset), piece(j).count, -1, {}, 0);
    } else {
      const bool last = q == n - 1;
      for (size_t j = 0; j <= nchunks; ++j) {
        int to = (!last && j > 0) ? ringNext(s) : -1;
        Span fwd = j > 0 ? piece(j - 1) : Span{0, 0};
        Span in = j < nchunks ? piece(j) : Span{0, 0};
        addTransfer(prog, to, recvAt(fwd.offset), fwd.count, j < nchunks ? ringPrev(s) : -1, recvAt(in.offset), in.count);
      }
    }
    out.programs.push_back(std::move(prog));
  }
  return out;
}

}  // namespace atl::algo
