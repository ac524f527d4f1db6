// Fits the cost model's parameters to measured all-reduce times (atoll-calibrate runs the
// benchmarks; this is the arithmetic). Every fit goes through estimateUs itself, evaluated at unit
// parameter values, so the calibration cannot drift from the formulas it calibrates.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "tuning/cost_model.h"

namespace atl::tuning {

/// One measured all-reduce on a single island of `nranks` ranks over one kind of link.
struct Sample {
  algo::Algo algo = algo::Algo::Ring;
  size_t bytes = 0;
  double us = 0;
};

struct LinkFit {
  LinkParams link;        // latency net of the step overhead
  double alphaUs = 0;     // one hop: step overhead + latency, as the ring measured it
  double stepOverheadUs = 0;
  bool overheadFitted = false;  // one-shot samples (3+ ranks) separated overhead from latency
  double treeBwPenalty = 0, rhdBwPenalty = 0, rdBwPenalty = 0;  // 0: no samples for that algorithm
};

/// Fits one link kind from samples taken on `nranks` ranks. Needs ring samples at two or more
/// distinct sizes; `priorOverheadUs` splits the hop time when no one-shot samples exist.
/// False (with *error) when the samples cannot determine the parameters.
bool fitLink(const std::vector<Sample>& samples, int nranks, double priorOverheadUs, LinkFit* out, std::string* error);

/// The model's estimate for a sample with the given parameters on one island of `nranks`.
double predictUs(const Sample& s, int nranks, const LinkParams& link, const ModelParams& m);

}  // namespace atl::tuning
