// Alpha-beta estimates of one collective's time under each algorithm. Inputs are a handful of
// fabric numbers (topology/ or the defaults below), so the model stays cheap enough to evaluate on
// every plan-cache miss and simple enough to read next to the measurements it was calibrated on.
#pragma once

#include <cstddef>

#include "algorithms/schedule.h"

namespace atl::tuning {

/// One kind of link: bandwidth as the bus bandwidth a ring achieves over it with the default
/// channel count, latency as the one-hop time minus the per-step software overhead.
struct LinkParams {
  double bwGBs;
  double latUs;
};

// Calibration on the 2-core development host (all_reduce_perf, 2 ranks):
//   shm:     8 B all-reduce (1 hop)  ~0.25 us; 64 MiB ring all-reduce ~4.5 GB/s busbw
//   sockets: 8 B all-reduce          ~6 us;    64 MiB ring all-reduce ~1.6 GB/s busbw
// The 1-hop time is stepOverhead + latency; only their sum was measured, and the split only matters
// to Direct, which pays the overhead once per peer but the latency once.
inline constexpr double kDefaultStepOverheadUs = 0.2;
inline constexpr LinkParams kShmLink{4.5, 0.05};
inline constexpr LinkParams kSocketLink{1.6, 5.8};

/// Direct sends the whole buffer to every peer: only worth it while n * bytes stays small.
inline constexpr size_t kDirectMaxTotalBytes = size_t{1} << 20;

struct SelectInput {
  algo::Coll coll = algo::Coll::AllReduce;
  size_t bytes = 0;  // the full buffer: all-reduce count*size, all-gather output, reduce-scatter input
  int nranks = 1;
  int nIslands = 1;
  int minIslandSize = 1;
  int maxIslandSize = 1;
  double intraBwGBs = kShmLink.bwGBs;
  double intraLatUs = kShmLink.latUs;
  double interBwGBs = kSocketLink.bwGBs;
  double interLatUs = kSocketLink.latUs;
  double stepOverheadUs = kDefaultStepOverheadUs;
  int maxChannels = 1;
};

/// Whether the algorithm can run this shape at all (rd: power-of-two n; hierarchical: >1 island;
/// direct: small n*bytes; everything but the ring: all-reduce only, for now).
bool applicable(algo::Algo a, const SelectInput& in);

/// Estimated time in microseconds; +infinity where not applicable.
double estimateUs(algo::Algo a, const SelectInput& in);

}  // namespace atl::tuning
