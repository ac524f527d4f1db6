// Pipelined chain reduce ending at the root: the rank after the root starts, every rank folds in
// its own input and forwards, and the root folds the last contribution into its output.
#include <algorithm>

#include "algorithms/ring.h"

namespace atl::algo {

Schedule chainReduce(const CollSpec& s) {
  Schedule out;
  const int n = s.nranks;
  const int q = mod(s.rank - s.root, n);  // 0 = root (chain end), 1 = chain start
  const int nch = channelsFor(s.count, s.nchannels, s.chunkElems);
  const size_t chunk = std::max<size_t>(s.chunkElems, 1);
  if (n > 2 && q > 1) out.scratchElems = static_cast<size_t>(nch) * 2 * chunk;
  for (int c = 0; c < nch && s.count > 0; ++c) {
    Span seg = evenSplit(s.count, nch, c);
    Program prog;
    prog.channel = c;
    const size_t nchunks = (seg.count + chunk - 1) / chunk;
    auto piece = [&](size_t j) {
      size_t off = j * chunk;
      return Span{seg.offset + off, std::min(chunk, seg.count - off)};
    };
    auto slot = [&](size_t j) { return scratchAt(static_cast<size_t>(c) * 2 * chunk + (j % 2) * chunk); };
    if (n == 1) {
      if (!s.inPlace) addCopy(prog, sendAt(seg.offset), recvAt(seg.offset), seg.count);
    } else if (q == 1) {
      for (size_t j = 0; j < nchunks; ++j) addTransfer(prog, ringNext(s), sendAt(piece(j).offset), piece(j).count, -1, {}, 0);
    } else if (q == 0) {
      for (size_t j = 0; j < nchunks; ++j)
        addTransfer(prog, -1, {}, 0, ringPrev(s), recvAt(piece(j).offset), piece(j).count, true, sendAt(piece(j).offset));
    } else {
      for (size_t j = 0; j <= nchunks; ++j) {
        Span fwd = j > 0 ? piece(j - 1) : Span{0, 0};
        Span in = j < nchunks ? piece(j) : Span{0, 0};
        addTransfer(prog, j > 0 ? ringNext(s) : -1, slot(j + 1), fwd.count, j < nchunks ? ringPrev(s) : -1, slot(j),
                    in.count, true, sendAt(in.offset));
      }
    }
    out.programs.push_back(std::move(prog));
  }
  return out;
}

}  // namespace atl::algo
