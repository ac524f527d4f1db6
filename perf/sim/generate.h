// Every rank's programs for one collective, from the engine's generators, without running the
// generator n times where the schedule is symmetric: at 32k ranks a flat ring is 2 billion steps
// to build, but rank r's program is rank 0's with every peer moved by r. Ranks are built once per
// period P (ranks 0..P-1) and the others relabelled; the relabelling is checked against full builds
// of sampled ranks, and a period that fails the check is not used (the last resort, P = n, builds
// every rank).
#pragma once

#include <cstdint>
#include <vector>

#include "algorithms/schedule.h"
#include "perf/sim/programs.h"

namespace atl::sim {

struct Generated {
  std::vector<std::vector<CompressedProgram>> programs;  // per rank
  int period = 0;     // ranks built per relabelling period (n: every rank built)
  int built = 0;      // generator calls, samples included
  double seconds = 0;
  bool overBudget = false;  // stopped: the programs would hold more than maxRuns runs
};

/// `spec` with spec.rank ignored; `periods` the candidates to try in order (each must divide
/// nranks to be tried; nranks itself is always the last resort). Stops with overBudget, and no
/// programs, once the runs over all ranks pass maxRuns (0: no limit).
Generated generatePrograms(const algo::CollSpec& spec, const std::vector<int>& periods, uint64_t maxRuns = 0);

}  // namespace atl::sim
