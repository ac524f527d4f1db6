// Runs every rank's programs (perf/sim/programs.h) over a Network as the engine would, event by
// event: a step costs a fixed overhead, then its send becomes a flow (eager: the engine's links
// buffer, so a send does not wait for the receive) and its receive completes when the matching
// flow has arrived (in order per connection, as the engine's byte streams deliver). Flows share
// links at max-min fair rates, solved again whenever the set of flows changes.
#pragma once

#include <cstdint>
#include <vector>

#include "perf/sim/network.h"
#include "perf/sim/programs.h"

namespace atl::sim {

struct CostParams {
  double stepOverheadUs = 0;  // per step (atoll-calibrate's step overhead)
  double reduceGBs = 0;       // host reduce throughput for reducing receives and LocalReduce; 0 = free
  double copyGBs = 0;         // LocalCopy throughput; 0 = free
  size_t elemBytes = 4;
};

struct SimResult {
  double timeUs = 0;     // until the last rank finished
  uint64_t flows = 0;    // transfers simulated
  uint64_t solves = 0;   // max-min solutions computed
  uint64_t steps = 0;    // steps executed over all ranks
  uint64_t programsDone = 0;
  bool complete = false;  // every program ran to its end (false: a receive never matched)
};

/// programs[r] is rank r's compressed schedule; ranks map to the network's GPUs one to one.
SimResult simulate(const Network& net, const std::vector<std::vector<CompressedProgram>>& programs, const CostParams& cost);

}  // namespace atl::sim
