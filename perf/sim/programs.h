// A rank's schedule (algorithms/schedule.h, built by the engine's own generators) as atoll-sim
// reads it: per program, runs of steps with the same shape. Timing depends on a step's kind, peers,
// counts and whether it reduces, never on buffer offsets, so a ring's 2(n-1) steps per channel
// shrink to a few runs; a 32k-rank ring is then held in kilobytes per rank. Counts within one
// element of the run's first step merge too (evenSplit's remainder would otherwise break a ring of
// n ranks over count % n != 0 into runs of one): the run keeps the exact totals, and the simulator
// moves their mean in each step, so a step is off by under one element and the run by none.
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
  StepShape shape;  // the first step's; the others differ at most in counts, by one element
  uint32_t repeat = 1;
  uint64_t sendTotal = 0, recvTotal = 0;  // elements over all the run's steps
  /// Elements per step, on average: what each of the run's steps moves in the simulation.
  double sendMean() const { return static_cast<double>(sendTotal) / repeat; }
  double recvMean() const { return static_cast<double>(recvTotal) / repeat; }
};

struct CompressedProgram {
  int channel = 0;
  std::vector<Run> runs;
  uint64_t steps() const;
};

/// The schedule's programs with consecutive steps of one shape (up to a count of one element) merged.
std::vector<CompressedProgram> compress(const algo::Schedule& s);
StepShape shapeOf(const algo::Step& step);
/// Whether `next` may join a run that started with `first`: same kind, peers and reduction, and
/// counts within one element (a zero count only with zero: an empty half is no transfer at all).
bool mergeable(const StepShape& first, const StepShape& next);

/// `p` as rank (r + shift) mod n would run it, if rank r runs p: every peer moves by `shift`.
CompressedProgram relabel(const CompressedProgram& p, int shift, int n);
/// Whether two programs time alike: the same runs, each run's totals within one element per step.
bool equivalent(const CompressedProgram& a, const CompressedProgram& b);

}  // namespace atl::sim
