#include "perf/baselines/peer_sweep.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>

#include "perf/common/collectives.h"
#include "perf/common/report.h"
#include "perf/common/values.h"
#include "perf/common/world.h"

namespace atl::perf::baseline {
namespace {

constexpr int kExitWrong = 1;
constexpr int kExitUsage = 2;
constexpr size_t kElem = sizeof(float);

double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

class Sweep {
 public:
  Sweep(const Options& options, const PeerTool& info, Peer& peer)
      : o_(options),
        peer_(peer),
        coll_{Coll::AllReduce, "AllReduce", info.tool, true, false},
        pattern_(ncclFloat, Combine::Sum, peer.size()) {
    world_.nprocs = peer.size();
    world_.proc = peer.rank();
    world_.launcher = info.launcher;
    // Value-initialised like the driver's buffers, which also faults every page in before timing.
    const size_t count = o_.maxBytes / kElem + 16;
    send_ = std::make_unique<float[]>(count);
    recv_ = std::make_unique<float[]>(count);
  }

  int run(const PeerTool& info) {
    std::unique_ptr<Report> report;
    if (peer_.rank() == 0) {
      for (const std::string& note : info.notes) std::printf("# %s\n", note.c_str());
      report = std::make_unique<Report>(o_, coll_, world_, peer_.size());
      report->printPreamble();
    }
    shareRankLines(report.get());
    const std::vector<size_t> sizes = messageSizes(o_);
    if (!sizes.empty() && o_.warmupIters > 0) {
      // Warm up at both ends of the range, as all_reduce_perf does.
      for (size_t bytes : {sizes.back(), sizes.front()}) {
        peer_.prepare(Place::OutOfPlace, send_.get(), recv_.get(), countOf(bytes));
        for (int i = 0; i < o_.warmupIters; ++i) peer_.allreduce();
      }
    }
    bool wrongSeen = false;
    for (size_t bytes : sizes) {
      Row row = measure(bytes);
      wrongSeen = wrongSeen || row.outOfPlace.wrong > 0 || row.inPlace.wrong > 0;
      if (report) report->addRow(row);
    }
    if (report && report->finish() != 0) wrongSeen = true;
    return wrongSeen ? kExitWrong : 0;
  }

 private:
  size_t countOf(size_t bytes) const { return layoutFor(Coll::AllReduce, bytes, kElem, peer_.size(), 0).sendCount; }

  void shareRankLines(Report* report) {
    char host[64] = {};
    gethostname(host, sizeof host - 1);
    char line[192];
    std::snprintf(line, sizeof line, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x00] host", peer_.rank(), 0,
                  static_cast<int>(getpid()), host, -1);
    std::vector<std::string> lines = peer_.gatherLines(line);
    if (report) report->printRanks(lines);
  }

  void barrier() {
    double dummy = 0;
    peer_.reduceDoubles(&dummy, 1, ncclSum);
  }

  // Zeroes the buffers after a verification so timed in-place loops never grow values.
  void clean(size_t count) {
    if (!dirty_) return;
    std::memset(send_.get(), 0, count * kElem);
    std::memset(recv_.get(), 0, count * kElem);
    dirty_ = false;
  }

  double timeIt(int iters) {
    barrier();
    const double start = now();
    for (int i = 0; i < iters; ++i) peer_.allreduce();
    return (now() - start) * 1e6 / iters;
  }

  int64_t verify(Place place, size_t count) {
    const bool inPlace = place == Place::InPlace;
    // 0xff bytes are NaN, so an output the library never wrote cannot pass.
    std::memset(recv_.get(), 0xff, count * kElem);
    pattern_.fill(peer_.rank(), inPlace ? recv_.get() : send_.get(), count);
    peer_.allreduce();
    const Layout l = layoutFor(Coll::AllReduce, count * kElem, kElem, peer_.size(), peer_.rank());
    int64_t wrong = 0;
    for (size_t j = 0; j < count; ++j) {
      const double want = expectedOutput(Coll::AllReduce, pattern_, l, peer_.rank(), -1, peer_.size(), j);
      if (!pattern_.matches(decode(ncclFloat, recv_.get(), j), want)) ++wrong;
    }
    return wrong;
  }

  Row measure(size_t bytes) {
    const size_t count = countOf(bytes);
    double times[2] = {};
    double wrongs[2] = {-1, -1};
    for (Place place : {Place::OutOfPlace, Place::InPlace}) {
      clean(count);
      const int p = place == Place::InPlace ? 1 : 0;
      peer_.prepare(place, send_.get(), recv_.get(), count);
      if (o_.warmupIters > 0) peer_.allreduce();  // as perf/common/driver.cc: first call per shape untimed
      times[p] = timeIt(o_.iters);
      if (o_.check) {
        wrongs[p] = static_cast<double>(verify(place, count));
        dirty_ = true;
      }
    }
    static constexpr ncclRedOp_t kTimeOps[] = {ncclMin, ncclSum, ncclMax, ncclSum};
    peer_.reduceDoubles(times, 2, kTimeOps[static_cast<int>(o_.average)]);
    if (o_.average == TimeReduce::Avg) {
      for (double& t : times) t /= peer_.size();
    }
    if (o_.check) peer_.reduceDoubles(wrongs, 2, ncclSum);

    Row row;
    row.bytes = count * kElem;
    row.count = count;
    row.type = ncclFloat;
    row.op = "sum";
    row.root = -1;
    const double factor = busBwFactor(Coll::AllReduce, peer_.size());
    Measurement* sides[2] = {&row.outOfPlace, &row.inPlace};
    for (int p = 0; p < 2; ++p) {
      Measurement& m = *sides[p];
      m.timeUs = times[p];
      m.algBw = times[p] > 0 ? static_cast<double>(row.bytes) / (times[p] * 1e3) : 0.0;
      m.busBw = m.algBw * factor;
      m.wrong = static_cast<int64_t>(wrongs[p]);
    }
    return row;
  }

  const Options& o_;
  Peer& peer_;
  CollInfo coll_;
  World world_;
  Pattern pattern_;
  std::unique_ptr<float[]> send_, recv_;
  bool dirty_ = false;
};

}  // namespace

int parsePeerOptions(int argc, char** argv, const char* tool, bool printErrors, Options* out) {
  std::string error;
  switch (parseOptions(argc, argv, out, &error)) {
    case ParseOutcome::Help:
      if (printErrors) printUsage(tool, true, false);
      return 0;
    case ParseOutcome::Error:
      if (printErrors) {
        std::fprintf(stderr, "%s: %s\n", tool, error.c_str());
        printUsage(tool, true, false);
      }
      return kExitUsage;
    case ParseOutcome::Run:
      break;
  }
  const Options& o = *out;
  const bool floatSum = o.types.size() == 1 && o.types[0] == ncclFloat && o.ops.size() == 1 && o.ops[0] == ncclSum;
  if (!floatSum || o.threads != 1 || o.ranksPerThread != 1 || o.aggIters != 1 || o.cycles != 1 || o.cpuTime) {
    if (printErrors)
      std::fprintf(stderr,
                   "%s: only float sum, one rank per process, is supported (-d float -o sum -t 1 -g 1 -m 1 "
                   "-N 1 -C 0)\n",
                   tool);
    return kExitUsage;
  }
  return -1;
}

int runPeerSweep(const Options& options, const PeerTool& info, Peer& peer) {
  Sweep sweep(options, info, peer);
  return sweep.run(info);
}

}  // namespace atl::perf::baseline
