#include "algorithms/hier_pieces.h"

#include <algorithm>

namespace atl::algo {

std::vector<BlockRun> runsOf(const std::vector<int>& set, bool merge) {
  std::vector<BlockRun> runs;
  for (int r : set) {
    if (merge && !runs.empty() && runs.back().first + runs.back().blocks == r)
      runs.back().blocks++;
    else
      runs.push_back({r, 1});
  }
  return runs;
}

Ref BlockSpace::at(int rank, size_t count, Span seg) const {
  size_t index = static_cast<size_t>(rank);
  if (order != nullptr) index = static_cast<size_t>(std::lower_bound(order->begin(), order->end(), rank) - order->begin());
  return Ref{buf, base + index * count + seg.offset};
}

void exchangeRuns(Program& prog, int next, const std::vector<BlockRun>& out, const BlockSpace& from, int prev,
                  const std::vector<BlockRun>& in, const BlockSpace& to, size_t count, Span seg, const BlockSpace* acc) {
  // A merged run only exists when seg is the whole block, so this is its length either way.
  auto elems = [&](const BlockRun& r) { return static_cast<size_t>(r.blocks - 1) * count + seg.count; };
  for (size_t k = 0; k < std::max(out.size(), in.size()); ++k) {
    const bool sends = k < out.size(), recvs = k < in.size();
    const BlockRun o = sends ? out[k] : BlockRun{}, i = recvs ? in[k] : BlockRun{};
    addTransfer(prog, sends ? next : -1, from.at(o.first, count, seg), sends ? elems(o) : 0, recvs ? prev : -1,
                to.at(i.first, count, seg), recvs ? elems(i) : 0, acc != nullptr,
                acc != nullptr ? acc->at(i.first, count, seg) : Ref{});
  }
}

}  // namespace atl::algo
