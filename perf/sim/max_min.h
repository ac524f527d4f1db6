// Max-min fair sharing of capacitated resources (links) by flows, the rate model of atoll-sim: a
// flow gets the largest rate such that raising it would take bandwidth from a flow that has no more
// (progressive filling). Each flow crosses a few resources (its path's links); a flow may also
// carry its own cap (a NIC's per-connection limit), which acts as a private resource.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace atl::sim {

/// Flows and the resources each crosses, in compressed rows: flow f crosses
/// resources[offsets[f] .. offsets[f + 1]). A resource listed twice for one flow counts twice
/// (a path that crosses a link in both directions uses both).
struct FlowPaths {
  std::vector<uint32_t> offsets{0};
  std::vector<uint32_t> resources;
  std::vector<double> cap;  // per flow; <= 0: none

  size_t flows() const { return offsets.size() - 1; }
  void add(std::span<const uint32_t> path, double flowCap = 0) {
    resources.insert(resources.end(), path.begin(), path.end());
    offsets.push_back(static_cast<uint32_t>(resources.size()));
    cap.push_back(flowCap);
  }
};

/// The max-min fair rate of every flow, in the capacities' unit. A flow that crosses no resource
/// and has no cap is unconstrained: its rate is +infinity. Runs in O((F * L + R) log R) for F flows
/// of L hops over R resources.
std::vector<double> maxMinRates(std::span<const double> capacity, const FlowPaths& flows);

}  // namespace atl::sim
