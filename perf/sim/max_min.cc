#include "perf/sim/max_min.h"

#include <algorithm>
#include <limits>
#include <queue>

namespace atl::sim {

std::vector<double> maxMinRates(std::span<const double> capacity, const FlowPaths& flows) {
  const size_t nf = flows.flows();
  const size_t nr = capacity.size();
  // Per-flow caps become resources after the shared ones, each crossed by its flow alone.
  std::vector<double> left(capacity.begin(), capacity.end());
  std::vector<uint32_t> users(nr, 0);
  std::vector<uint32_t> capOf(nf, UINT32_MAX);
  for (size_t f = 0; f < nf; ++f) {
    for (uint32_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) ++users[flows.resources[i]];
    if (flows.cap[f] > 0) {
      capOf[f] = static_cast<uint32_t>(left.size());
      left.push_back(flows.cap[f]);
      users.push_back(1);
    }
  }
  // Flows of each resource (the inverse rows), to freeze a saturated resource's flows.
  const size_t nAll = left.size();
  std::vector<uint32_t> start(nAll + 1, 0);
  for (size_t r = 0; r < nAll; ++r) start[r + 1] = start[r] + users[r];
  std::vector<uint32_t> members(start[nAll]);
  {
    std::vector<uint32_t> fill(start.begin(), start.end() - 1);
    for (size_t f = 0; f < nf; ++f) {
      for (uint32_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) members[fill[flows.resources[i]]++] = static_cast<uint32_t>(f);
      if (capOf[f] != UINT32_MAX) members[fill[capOf[f]]++] = static_cast<uint32_t>(f);
    }
  }
  auto share = [&](size_t r) { return left[r] / users[r]; };
  // Smallest fair share first; entries go stale as shares change and are re-pushed, so an entry
  // counts only while it matches the resource's current share.
  using Entry = std::pair<double, uint32_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  for (size_t r = 0; r < nAll; ++r)
    if (users[r] > 0) heap.push({share(r), static_cast<uint32_t>(r)});
  std::vector<double> rate(nf, std::numeric_limits<double>::infinity());
  std::vector<bool> frozen(nf, false);
  auto pathOf = [&](uint32_t f, auto&& visit) {
    for (uint32_t i = flows.offsets[f]; i < flows.offsets[f + 1]; ++i) visit(flows.resources[i]);
    if (capOf[f] != UINT32_MAX) visit(capOf[f]);
  };
  while (!heap.empty()) {
    const auto [s, r] = heap.top();
    heap.pop();
    if (users[r] == 0 || s != share(r)) continue;  // done, or stale
    const double fair = std::max(0.0, s);
    for (uint32_t i = start[r]; i < start[r + 1]; ++i) {
      const uint32_t f = members[i];
      if (frozen[f]) continue;
      frozen[f] = true;
      rate[f] = fair;
      pathOf(f, [&](uint32_t q) {
        left[q] -= fair;
        --users[q];
        if (users[q] > 0 && q != r) heap.push({share(q), q});
      });
    }
  }
  return rate;
}

}  // namespace atl::sim
