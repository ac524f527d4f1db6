// A rank's schedule (algorithms/schedule.h, built by the engine's own generators) as atoll-sim
// reads it: per program, runs of steps with the same shape. Timing depends on a step's kind, peers,
// counts and whether it reduces, never on buffer offsets, so a ring's 2(n-1) steps per channel
// shrink to a few runs; a 32k-rank ring is then held in kilobytes per rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/schedule.h"

namespace atl::sim {

struct StepShape {
  algo::StepKind kind = algo::StepKind::Transfer;
  int sendPeer = -1;
  size_t sendCount = 0;  // elements
  int recvPeer = -1;
  size_t recvCount = 0;
  bool reduce = false;
  bool operator==(const StepShape&) const = default;
};

struct Run {
  StepShape shape;
  uint32_t repeat = 1;
};

struct CompressedProgram {
  int channel = 0;
  std::vector<Run> runs;
  uint64_t steps() const;
};

/// The schedule's programs with consecutive equal shapes merged.
std::vector<CompressedProgram> compress(const algo::Schedule& s);
StepShape shapeOf(const algo::Step& step);

}  // namespace atl::sim
