// Runs every rank's programs (perf/sim/programs.h) over a Network as the engine would, event by
// event: a step costs a fixed overhead, then its send becomes a flow (eager: the engine's links
// buffer, so a send does not wait for the receive) and its receive completes when the matching
// flow has arrived (in order per connection, as the engine's byte streams deliver). Flows share
// links at max-min fair rates, solved again whenever the set of flows changes.
//
// Fast-forward: a collective at scale is mostly long runs of identical steps, and once the ranks
// settle into a pattern (a ring's pipeline, paced by its slowest hop), the whole simulation state
// repeats every period with each program a fixed number of steps further. The executor takes a
// snapshot whenever its reference program starts a step; when a snapshot equals an earlier one
// relative to time and step position (every program in the same run and phase, every flow with
// the same bytes left at the same rate, every pending event as far ahead, every connection as far
// behind), nothing can differ in the periods that follow until some program reaches the end of its
// run, so it jumps over those periods at once. Without the jump, a 32k-rank ring would be 2 billion
// flows; with it, the runs' first few periods and their ends.
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
  bool fastForward = true;  // false: every step simulated (the tests compare the two)
  // Stop after simulating this many steps (0: never). What fast-forward cannot shorten: a flat ring
  // whose pace is set by the latency around the whole ring (32k GPUs, 1 GiB: 32 KiB steps) has no
  // period shorter than the ring, so it costs 2(n-1) steps on each of n ranks.
  uint64_t maxSimulatedSteps = 0;
  // Stop after re-solving this many flow rates in all (0: never): many flows sharing one link
  // (an all-to-all-like step of 100k ranks through the core) are one component, re-solved whole
  // each time one of them ends.
  uint64_t maxSolveWork = 0;
  // Ranks that fail at failAtUs (perf/sim/failure.h): from then on they start no step and their
  // flows stop (what they had already sent still arrives); the others run until nothing can move.
  // Fast-forward is off in such a run.
  std::vector<int> failRanks;
  double failAtUs = 0;
};

struct SimResult {
  double timeUs = 0;     // until the last rank finished
  uint64_t flows = 0;    // transfers simulated
  uint64_t solves = 0;   // max-min solutions computed
  uint64_t steps = 0;    // steps executed over all ranks
  uint64_t programsDone = 0;
  bool complete = false;  // every program ran to its end (false: a receive never matched, or aborted)
  bool aborted = false;   // stopped at maxSimulatedSteps or maxSolveWork
  uint64_t solveWork = 0;  // flows whose rates were solved, summed over the solves
  uint64_t jumps = 0;         // fast-forwards taken
  uint64_t stepsSkipped = 0;  // steps (of `steps`) accounted by jumps rather than simulated
  // Per rank, filled when failRanks is not empty: when it last moved (started or finished a step),
  // whether all its programs ended, and the rank whose data it is left waiting for (-1: none).
  std::vector<double> lastMoveUs;
  std::vector<uint8_t> finished;
  std::vector<int> waitingOn;
};

/// programs[r] is rank r's compressed schedule; ranks map to the network's GPUs one to one.
SimResult simulate(const Network& net, const std::vector<std::vector<CompressedProgram>>& programs, const CostParams& cost);

}  // namespace atl::sim
