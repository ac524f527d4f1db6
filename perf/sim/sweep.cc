#include "perf/sim/sweep.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "perf/sim/generate.h"

namespace atl::sim {

size_t countFor(algo::Coll c, size_t bytes, size_t elemBytes, int nranks) {
  const size_t elems = bytes / elemBytes;
  switch (c) {
    case algo::Coll::AllGather:
    case algo::Coll::ReduceScatter:
    case algo::Coll::AlltoAll:
    case algo::Coll::Gather:
    case algo::Coll::Scatter: return elems / static_cast<size_t>(nranks);
    default: return elems;
  }
}

double busBwFactor(algo::Coll c, int nranks) {
  const double n = nranks;
  switch (c) {
    case algo::Coll::AllReduce: return 2 * (n - 1) / n;
    case algo::Coll::AllGather:
    case algo::Coll::ReduceScatter:
    case algo::Coll::AlltoAll: return (n - 1) / n;
    default: return 1;
  }
}

Result<tuning::Selector> clusterSelector(const topo::ClusterSpec& spec, const topo::Cluster& cluster, int channels,
                                         double stepUs) {
  tuning::FabricParams f = tuning::FabricParams::defaults();
  f.intra = tuning::LinkParams{spec.node.nicGbps / 8, spec.leafLatUs};
  f.inter = tuning::LinkParams{cluster.levels.interBwGBs, cluster.levels.interLatUs};
  f.interSharers = spec.node.gpus;
  f.islandHosts = cluster.levels.islandHosts;
  f.groups = cluster.levels.groups;
  f.group = tuning::LinkParams{cluster.levels.groupBwGBs, cluster.levels.groupLatUs};
  if (cluster.levels.islandHosts > 1 && spec.node.gpus > 1) {
    f.hostRanks = spec.node.gpus;
    f.host = tuning::LinkParams{hostPortGBs(spec.node), kHostLatUs};
  }
  if (spec.nodes > 1) f.intraSharers = std::max(1.0, static_cast<double>(spec.node.gpus) / std::max(1, spec.node.nics));
  if (stepUs >= 0) f.model.stepOverheadUs = stepUs;
  return tuning::Selector::create(static_cast<int>(cluster.ranks.size()), &cluster.islands, f, channels);
}

algo::CollSpec collSpec(const Setup& setup, algo::Coll coll, algo::Algo a, size_t bytes) {
  const int n = setup.net->gpus();
  algo::CollSpec spec;
  spec.coll = coll;
  spec.nranks = n;
  spec.count = countFor(coll, bytes, setup.cost.elemBytes, n);
  spec.nchannels = setup.nchannels;
  spec.chunkElems = std::max<size_t>(1, setup.chunkBytes / setup.cost.elemBytes);
  spec.algo = a;
  spec.islands = setup.islands;
  return spec;
}

std::vector<int> generationPeriods(const Setup& setup) {
  std::vector<int> periods = {1, setup.net->gpusPerNode()};
  if (setup.islands && !setup.islands->members.empty()) periods.push_back(static_cast<int>(setup.islands->members[0].size()));
  return periods;
}

Point simulateCollective(const Setup& setup, algo::Coll coll, algo::Algo a, size_t bytes) {
  const Network& net = *setup.net;
  const algo::CollSpec spec = collSpec(setup, coll, a, bytes);
  Point p;
  p.algo = algo::executedAlgo(spec);
  p.bytes = bytes;
  if (spec.count == 0) {
    p.skipped = "message smaller than one element per rank";
    return p;
  }
  Generated g = generatePrograms(spec, generationPeriods(setup), setup.maxRuns);
  p.period = g.period;
  p.genSeconds = g.seconds;
  if (g.overBudget) {
    char why[96];
    std::snprintf(why, sizeof why, "its programs pass %llu runs over all ranks",
                  static_cast<unsigned long long>(setup.maxRuns));
    p.skipped = why;
    return p;
  }
  const auto t0 = std::chrono::steady_clock::now();
  p.result = simulate(net, g.programs, setup.cost);
  p.simSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  p.simulated = true;
  if (p.result.aborted) {
    char why[128];
    if (p.result.solveWork > setup.cost.maxSolveWork && setup.cost.maxSolveWork > 0)
      std::snprintf(why, sizeof why, "over the budget of %llu flow-rate solutions (one giant contention component)",
                    static_cast<unsigned long long>(setup.cost.maxSolveWork));
    else
      std::snprintf(why, sizeof why, "over the budget of %llu simulated steps (no short period found)",
                    static_cast<unsigned long long>(setup.cost.maxSimulatedSteps));
    p.skipped = why;
  } else if (!p.result.complete) {
    p.skipped = "incomplete: a receive never matched";
  }
  return p;
}

}  // namespace atl::sim
