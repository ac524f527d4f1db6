// atoll-sim: the engine's own schedules and selector, simulated on a synthetic cluster of any size.
// Prints nccl-tests-like rows (time, algbw, busbw per algorithm and size), the selector's pick and
// how far it is from the simulated best, then its own run time and peak memory. --csv writes the
// same rows for perf/sim/plot.py. docs/SIM.md explains the model and its limits.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "perf/common/options.h"
#include "perf/sim/failure.h"
#include "perf/sim/sweep.h"

namespace atl::sim {
namespace {

struct Args {
  topo::ClusterSpec cluster;
  std::string fabricFile;  // --fabric: the cluster from this ATOLL_FABRIC_FILE instead of the generator
  algo::Coll coll = algo::Coll::AllReduce;
  std::vector<algo::Algo> algos;  // empty: every one the selector may pick for the collective
  size_t minBytes = 1 << 20, maxBytes = size_t{1} << 30;
  double factor = 4;
  int channels = 1;
  size_t chunkBytes = 128 << 10;
  double stepUs = -1;  // <0: the calibrated model's step overhead
  double reduceGBs = 0, copyGBs = 0;
  bool fastForward = true;
  bool explain = false;  // the selector's estimates under each row
  std::string csv;
  uint64_t maxRuns = 40'000'000;
  uint64_t maxSteps = 100'000'000;
  uint64_t maxSolveWork = 2'000'000'000;
  // --fail-rank: simulate that rank failing in the first size's collective instead of the sweep.
  bool fail = false;
  FailureParams failure = FailureParams::fromRegistry();
  double failAt = 0.5;  // when, as a fraction of the collective's failure-free time
};

void usage() {
  std::fprintf(stderr,
               "usage: atoll-sim [options]\n"
               " cluster:  --nodes N (128) --gpus G (8) --nics R (4) --nic-gbps X (400) --no-nvswitch\n"
               "           --intra-gbs X (GPU to GPU in a host, each way: NVLink's 450 by default)\n"
               "           --nodes-per-leaf N (16) --leaves-per-island N (8) --island-oversub X (1)\n"
               "           --global-oversub X (1) --islands-per-group N (0: fat-tree; >0: Dragonfly+)\n"
               "           --group-oversub X (2)\n"
               "           --fabric FILE: the hosts, leaves, islands, groups and levels of an ATOLL_FABRIC_FILE\n"
               "             (docs/TOPOLOGY.md) instead of the generator's; --gpus/--nics/--no-nvswitch/\n"
               "             --intra-gbs still shape each host, and flags set levels the file leaves out\n"
               " workload: --coll allreduce|allgather|reducescatter|broadcast|reduce (allreduce)\n"
               "           --algos ring,tree,rhd,rd,direct,hierarchical,binomial,bruck (all that apply)\n"
               "           -b MIN (1M) -e MAX (1G) -f FACTOR (4) --channels C (1) --chunk-bytes B (128K)\n"
               " costs:    --step-us X (calibrated ATOLL_MODEL_STEP_US) --reduce-gbs X (0: free) --copy-gbs X\n"
               " output:   --csv FILE  --explain (the selector's estimates per size)  --no-fast-forward\n"
               "           --max-runs N (40000000: larger schedules are skipped)\n"
               "           --max-steps N (100000000: simulations needing more steps are abandoned)\n"
               "           --max-solve-work N (2000000000 flow-rate solutions: the same)\n"
               " failure:  --fail-rank R: rank R fails in the -b size's collective (the pick, or the first\n"
               "           of --algos); prints when the survivors' calls fail and what ncclCommShrink takes\n"
               "           --fail-mode kill|vanish|hang (kill) --fail-at F (0.5 of the failure-free time)\n"
               "           --boot-msg-us X (100) --root-reply-us X (10) --detect-us X (5)\n"
               "           ATOLL_TIMEOUT_MS and ATOLL_HEARTBEAT_TIMEOUT_MS are read as the engine reads them\n");
}

bool parseColl(const std::string& s, algo::Coll* c) {
  const struct { const char* name; algo::Coll coll; } names[] = {
      {"allreduce", algo::Coll::AllReduce}, {"allgather", algo::Coll::AllGather},
      {"reducescatter", algo::Coll::ReduceScatter}, {"broadcast", algo::Coll::Broadcast},
      {"reduce", algo::Coll::Reduce}};
  for (const auto& n : names)
    if (s == n.name) return *c = n.coll, true;
  return false;
}

bool parseAlgos(const std::string& list, std::vector<algo::Algo>* out) {
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, comma - start);
    bool found = false;
    for (int i = 0; i < algo::kNumAlgos; ++i)
      if (name == algo::algoName(static_cast<algo::Algo>(i))) out->push_back(static_cast<algo::Algo>(i)), found = true;
    if (!found) return std::fprintf(stderr, "atoll-sim: unknown algorithm '%s'\n", name.c_str()), false;
    start = comma + 1;
  }
  return true;
}

bool parseArgs(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "-h" || f == "--help") return usage(), false;
    if (f == "--no-fast-forward") { a->fastForward = false; continue; }
    if (f == "--no-nvswitch") { a->cluster.node.nvswitch = false; continue; }
    if (f == "--explain") { a->explain = true; continue; }
    if (i + 1 >= argc) return std::fprintf(stderr, "atoll-sim: %s needs a value\n", f.c_str()), usage(), false;
    const std::string v = argv[++i];
    char* end = nullptr;
    const double x = std::strtod(v.c_str(), &end);
    const bool number = end != v.c_str() && *end == '\0' && std::isfinite(x);
    auto positive = [&](auto* dst) {
      if (!number || x <= 0) return std::fprintf(stderr, "atoll-sim: %s wants a positive number, not '%s'\n", f.c_str(), v.c_str()), false;
      *dst = static_cast<std::remove_pointer_t<decltype(dst)>>(x);
      return true;
    };
    auto bytes = [&](size_t* dst) {
      if (!perf::parseByteSize(v, dst) || *dst == 0) return std::fprintf(stderr, "atoll-sim: %s wants a size, not '%s'\n", f.c_str(), v.c_str()), false;
      return true;
    };
    bool ok = true;
    topo::ClusterSpec& c = a->cluster;
    if (f == "--nodes") ok = positive(&c.nodes);
    else if (f == "--gpus") ok = positive(&c.node.gpus);
    else if (f == "--nics") ok = positive(&c.node.nics);
    else if (f == "--nic-gbps") ok = positive(&c.node.nicGbps);
    else if (f == "--intra-gbs") ok = positive(&c.node.intraGBs);
    else if (f == "--nodes-per-leaf") ok = positive(&c.nodesPerLeaf);
    else if (f == "--leaves-per-island") ok = positive(&c.leavesPerIsland);
    else if (f == "--island-oversub") ok = positive(&c.islandOversub);
    else if (f == "--global-oversub") ok = positive(&c.globalOversub);
    else if (f == "--group-oversub") ok = positive(&c.groupOversub);
    else if (f == "--islands-per-group") ok = number && x >= 0 ? (c.islandsPerGroup = static_cast<int>(x), true) : false;
    else if (f == "--coll") ok = parseColl(v, &a->coll);
    else if (f == "--algos") ok = parseAlgos(v, &a->algos);
    else if (f == "-b") ok = bytes(&a->minBytes);
    else if (f == "-e") ok = bytes(&a->maxBytes);
    else if (f == "-f") ok = number && x > 1 ? (a->factor = x, true) : false;
    else if (f == "--channels") ok = positive(&a->channels);
    else if (f == "--chunk-bytes") ok = bytes(&a->chunkBytes);
    else if (f == "--step-us") ok = number && x >= 0 ? (a->stepUs = x, true) : false;
    else if (f == "--reduce-gbs") ok = number && x >= 0 ? (a->reduceGBs = x, true) : false;
    else if (f == "--copy-gbs") ok = number && x >= 0 ? (a->copyGBs = x, true) : false;
    else if (f == "--max-runs") ok = positive(&a->maxRuns);
    else if (f == "--max-steps") ok = positive(&a->maxSteps);
    else if (f == "--max-solve-work") ok = positive(&a->maxSolveWork);
    else if (f == "--csv") a->csv = v;
    else if (f == "--fabric") a->fabricFile = v;
    else if (f == "--fail-rank") ok = number && x >= 0 ? (a->fail = true, a->failure.rank = static_cast<int>(x), true) : false;
    else if (f == "--fail-mode") ok = parseFailureMode(v, &a->failure.mode);
    else if (f == "--fail-at") ok = number && x >= 0 && x < 1 ? (a->failAt = x, true) : false;
    else if (f == "--boot-msg-us") ok = positive(&a->failure.bootMsgUs);
    else if (f == "--root-reply-us") ok = number && x >= 0 ? (a->failure.rootReplyUs = x, true) : false;
    else if (f == "--detect-us") ok = number && x >= 0 ? (a->failure.detectUs = x, true) : false;
    else return std::fprintf(stderr, "atoll-sim: unknown option %s\n", f.c_str()), usage(), false;
    if (!ok) return std::fprintf(stderr, "atoll-sim: bad value '%s' for %s\n", v.c_str(), f.c_str()), usage(), false;
  }
  if (a->minBytes > a->maxBytes) return std::fprintf(stderr, "atoll-sim: -b is above -e\n"), false;
  if (a->channels > 64) return std::fprintf(stderr, "atoll-sim: at most 64 channels\n"), false;
  return true;
}

double peakRssMiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

/// --fail-rank: one failure in the first size's collective, then the shrink.
int runFailure(const Args& a, const Setup& setup, const tuning::Selector& selector) {
  const size_t bytes = a.minBytes;
  const algo::Algo al = a.algos.empty() ? selector.choose(a.coll, bytes).algo : a.algos.front();
  const Point clean = simulateCollective(setup, a.coll, al, bytes);
  if (!clean.simulated || !clean.result.complete)
    return std::fprintf(stderr, "atoll-sim: %s at %zu B cannot be simulated: %s\n", algo::algoName(al), bytes,
                        clean.skipped.c_str()), 1;
  FailureParams f = a.failure;
  f.atUs = a.failAt * clean.result.timeUs;
  const FailureReport r = simulateFailure(setup, a.coll, al, bytes, f);
  if (!r.skipped.empty()) return std::fprintf(stderr, "atoll-sim: failure not simulated: %s\n", r.skipped.c_str()), 1;
  std::printf("# %s %s of %zu B (%.1f us without a failure); rank %d fails (%s, %zu rank(s)) at %.1f us\n",
              algo::algoName(clean.algo), algo::collName(a.coll), bytes, clean.result.timeUs, f.rank,
              failureModeName(f.mode), r.failed.size(), f.atUs);
  std::printf("# ATOLL_TIMEOUT_MS %.0f, ATOLL_HEARTBEAT_TIMEOUT_MS %.0f, chain wait %.0f ms; bootstrap message %.0f us, "
              "poll %.0f us, root reply %.0f us\n",
              f.timeoutMs, f.heartbeatTimeoutMs, f.chainWaitMs, f.bootMsgUs, f.detectUs, f.rootReplyUs);
  std::printf("survivors %d: %d stalled, %d finished the call first (they fail at their next), %d unreached\n",
              r.survivors, r.stalled, r.finishedCall, r.unresolved);
  std::printf("calls failed after the failure (ms): first %.3f, median %.3f, last %.3f; at most %d link hops\n",
              (r.firstErrorUs - f.atUs) / 1e3, (r.medianErrorUs - f.atUs) / 1e3, (r.lastErrorUs - f.atUs) / 1e3,
              r.maxHops);
  std::printf("ncclCommShrink (ms): id %.3f, joins %.3f, all-gather %.3f, barrier %.3f, in all %.3f\n", r.idUs / 1e3,
              r.joinUs / 1e3, r.allGatherUs / 1e3, r.barrierUs / 1e3, r.shrinkUs() / 1e3);
  std::printf("recovered (a working communicator) %.3f ms after the failure\n", (r.recoveredUs() - f.atUs) / 1e3);
  return 0;
}

int run(const Args& a) {
  const auto t0 = std::chrono::steady_clock::now();
  topo::ClusterSpec spec = a.cluster;
  std::vector<topo::NodePlacement> placements;
  Result<topo::Cluster> cluster = [&]() -> Result<topo::Cluster> {
    if (a.fabricFile.empty()) return topo::syntheticCluster(spec);
    ATOLL_ASSIGN_OR_RETURN(topo::Fabric fabric, topo::readFabricFile(a.fabricFile));
    ATOLL_ASSIGN_OR_RETURN(topo::Cluster c, topo::fabricCluster(spec.node, fabric, &placements));
    spec = specFromFabric(c.fabric, spec);
    return c;
  }();
  if (!cluster.ok()) return std::fprintf(stderr, "atoll-sim: %s\n", lastErrorMessage().c_str()), 2;
  const Network net = a.fabricFile.empty() ? Network(spec) : Network(spec, placements);
  const int n = net.gpus();
  auto selector = clusterSelector(spec, *cluster, a.channels, a.stepUs);
  if (!selector.ok()) return std::fprintf(stderr, "atoll-sim: %s\n", lastErrorMessage().c_str()), 2;
  Setup setup;
  setup.net = &net;
  setup.islands = std::make_shared<const topo::IslandMap>(net.islandMap());
  setup.nchannels = a.channels;
  setup.chunkBytes = a.chunkBytes;
  setup.cost.stepOverheadUs = a.stepUs >= 0 ? a.stepUs : selector->input().stepOverheadUs;
  setup.cost.reduceGBs = a.reduceGBs;
  setup.cost.copyGBs = a.copyGBs;
  setup.cost.fastForward = a.fastForward;
  setup.maxRuns = a.maxRuns;
  setup.cost.maxSimulatedSteps = a.maxSteps;
  setup.cost.maxSolveWork = a.maxSolveWork;

  if (a.fail) {
    const int rc = runFailure(a, setup, *selector);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("# atoll-sim run time %.2f s, peak RSS %.0f MiB\n", secs, peakRssMiB());
    return rc;
  }
  std::vector<algo::Algo> algos = a.algos;
  if (algos.empty()) {
    for (int i = 0; i < algo::kNumAlgos; ++i) {
      tuning::SelectInput in = selector->input();
      in.coll = a.coll;
      const auto al = static_cast<algo::Algo>(i);
      // Every algorithm that applies at some size in the sweep (direct only at small ones).
      in.bytes = a.minBytes;
      if (tuning::applicable(al, in)) algos.push_back(al);
    }
  }
  const topo::ClusterSpec& c = spec;
  // How hosts group: the generator's counts, or the file they came from.
  const std::string units = a.fabricFile.empty() ? std::to_string(c.nodesPerLeaf) + " nodes/leaf, " +
                                                       std::to_string(c.leavesPerIsland) + " leaves/island"
                                                 : "units of " + a.fabricFile;
  std::printf("# atoll-sim: %d GPUs = %d nodes x %d GPUs, %d x %.0f Gb/s NICs, %s (%zu islands), island oversub %.2g, %s\n",
              n, c.nodes, c.node.gpus, c.node.nics, c.node.nicGbps, units.c_str(), setup.islands->members.size(),
              c.islandOversub, c.islandsPerGroup > 0 ? "Dragonfly+" : "fat-tree core");
  if (c.islandsPerGroup > 0)
    std::printf("# Dragonfly+: %s, group oversub %.2g, global oversub %.2g\n",
                a.fabricFile.empty() ? (std::to_string(c.islandsPerGroup) + " islands/group").c_str() : "groups of the file",
                c.groupOversub, c.globalOversub);
  else
    std::printf("# core oversub %.2g\n", c.globalOversub);
  std::printf("# %s, float, %d channel(s), chunk %zu B, step overhead %.2f us, reduce %s, copy %s, fast-forward %s\n",
              algo::collName(a.coll), a.channels, a.chunkBytes, setup.cost.stepOverheadUs,
              a.reduceGBs > 0 ? (std::to_string(a.reduceGBs) + " GB/s").c_str() : "free",
              a.copyGBs > 0 ? (std::to_string(a.copyGBs) + " GB/s").c_str() : "free", a.fastForward ? "on" : "off");
  std::printf("#\n# %12s %12s", "size(B)", "count");
  for (algo::Algo al : algos) std::printf(" | %-12s %10s %8s", algo::algoName(al), "time(us)", "busbw");
  std::printf(" | %-12s %9s\n", "pick", "pick/best");

  FILE* csv = nullptr;
  if (!a.csv.empty()) {
    csv = std::fopen(a.csv.c_str(), "w");
    if (!csv) return std::fprintf(stderr, "atoll-sim: cannot write %s: %s\n", a.csv.c_str(), std::strerror(errno)), 1;
    std::fprintf(csv, "gpus,topology,coll,algo,bytes,time_us,algbw_gbs,busbw_gbs,picked,gen_s,sim_s,period,jumps\n");
  }
  const double factor = busBwFactor(a.coll, n);
  int worst = 0;
  for (size_t bytes = a.minBytes; bytes <= a.maxBytes;) {
    const tuning::Choice pick = selector->choose(a.coll, bytes);
    std::printf("  %12zu %12zu", bytes, countFor(a.coll, bytes, 4, n));
    double best = std::numeric_limits<double>::infinity(), picked = -1;
    for (algo::Algo al : algos) {
      tuning::SelectInput in = selector->input();
      in.coll = a.coll;
      in.bytes = bytes;
      if (!tuning::applicable(al, in)) {
        std::printf(" | %-12s %10s %8s", "", "n/a", "");
        continue;
      }
      const Point p = simulateCollective(setup, a.coll, al, bytes);
      if (!p.simulated || !p.result.complete) {
        std::printf(" | %-12s %10s %8s", "", "skipped", "");
        std::fprintf(stderr, "# %s at %zu B skipped: %s\n", algo::algoName(al), bytes, p.skipped.c_str());
        continue;
      }
      const double algbw = static_cast<double>(bytes) / (p.result.timeUs * 1e3);
      std::printf(" | %-12s %10.1f %8.2f", p.algo != al ? algo::algoName(p.algo) : "", p.result.timeUs, algbw * factor);
      best = std::min(best, p.result.timeUs);
      if (al == pick.algo) picked = p.result.timeUs;
      if (csv)
        std::fprintf(csv, "%d,%s,%s,%s,%zu,%.3f,%.4f,%.4f,%d,%.3f,%.3f,%d,%llu\n", n,
                     c.islandsPerGroup > 0 ? "dragonfly+" : "fat-tree", algo::collName(a.coll), algo::algoName(al), bytes,
                     p.result.timeUs, algbw, algbw * factor, al == pick.algo ? 1 : 0, p.genSeconds, p.simSeconds, p.period,
                     static_cast<unsigned long long>(p.result.jumps));
      std::fflush(csv ? csv : stdout);
    }
    if (picked > 0) {
      std::printf(" | %-12s %9.3f\n", algo::algoName(pick.algo), picked / best);
      if (picked / best > 1.10) ++worst;
    } else {
      std::printf(" | %-12s %9s\n", algo::algoName(pick.algo), "-");
    }
    if (a.explain) {
      const std::string t = selector->table(a.coll, bytes);
      size_t start = 0;
      while (start < t.size()) {
        const size_t nl = std::min(t.find('\n', start), t.size());
        std::printf("#   %s\n", t.substr(start, nl - start).c_str());
        start = nl + 1;
      }
    }
    std::fflush(stdout);
    const size_t next = static_cast<size_t>(static_cast<double>(bytes) * a.factor);
    if (next <= bytes) break;
    bytes = next;
  }
  if (csv) std::fclose(csv);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("# sizes where the pick is over 10%% slower than the simulated best: %d\n", worst);
  std::printf("# atoll-sim run time %.2f s, peak RSS %.0f MiB\n", secs, peakRssMiB());
  return 0;
}

}  // namespace
}  // namespace atl::sim

int main(int argc, char** argv) {
  atl::sim::Args a;
  a.cluster.nodes = 128;
  a.cluster.nodesPerLeaf = 16;
  a.cluster.leavesPerIsland = 8;
  if (!atl::sim::parseArgs(argc, argv, &a)) return 2;
  return atl::sim::run(a);
}
