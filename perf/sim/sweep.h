// One simulated collective: the engine's schedules for an algorithm and size, generated for every
// rank (perf/sim/generate.h) and run over the network (perf/sim/executor.h). What atoll-sim's
// tables, its tests and the validation against emulated clusters all call.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "perf/sim/executor.h"
#include "perf/sim/network.h"
#include "topology/synthetic.h"
#include "tuning/selector.h"

namespace atl::sim {

struct Setup {
  const Network* net = nullptr;
  std::shared_ptr<const topo::IslandMap> islands;  // null: one island
  int nchannels = 1;
  size_t chunkBytes = 128 << 10;  // ATOLL_CHUNK_BYTES
  CostParams cost;
  // A schedule whose compressed programs would exceed this many runs over all ranks is not
  // simulated (a 32k-rank direct exchange, a deeply chunked tree at gigabytes): memory, not time,
  // is what runs out first.
  uint64_t maxRuns = 40'000'000;
};

struct Point {
  algo::Algo algo = algo::Algo::Ring;  // what the generators ran (executedAlgo)
  size_t bytes = 0;
  bool simulated = false;
  std::string skipped;  // why not, when not simulated
  SimResult result;
  int period = 0;  // the generation's relabelling period
  double genSeconds = 0, simSeconds = 0;
};

/// The NCCL count argument for a message of `bytes` (the full buffer, as nccl-tests sizes it).
size_t countFor(algo::Coll c, size_t bytes, size_t elemBytes, int nranks);
/// busbw / algbw, nccl-tests' factor.
double busBwFactor(algo::Coll c, int nranks);

/// What the engine's generators are asked for: the NCCL call on every rank of the setup's network.
algo::CollSpec collSpec(const Setup& setup, algo::Coll coll, algo::Algo a, size_t bytes);
/// The relabelling periods to try (perf/sim/generate.h): a rank, a host, an island.
std::vector<int> generationPeriods(const Setup& setup);

Point simulateCollective(const Setup& setup, algo::Coll coll, algo::Algo a, size_t bytes);

/// The selector as the engine would build it for this cluster given as a fabric file
/// (core/comm_topology.cc): island links at the NIC's speed, links between islands from the
/// fabric's levels (per host, so all of a host's GPUs share them), the calibrated software costs,
/// with the step overhead replaced where stepUs >= 0.
Result<tuning::Selector> clusterSelector(const topo::ClusterSpec& spec, const topo::Cluster& cluster, int channels,
                                         double stepUs = -1);

}  // namespace atl::sim
