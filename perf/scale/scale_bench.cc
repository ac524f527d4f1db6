// What a communicator costs per rank at scale: init, one all-reduce, destroy, for N ranks as threads
// of this process (--threads N) or one rank per process under a launcher (--procs, e.g.
// `atollrun -np 128 scale_bench --procs`). Reports wall time per phase, peak RSS, descriptors,
// links and bootstrap messages per rank (perf/scale/README.md; the formulas are in
// docs/ARCHITECTURE.md). A benchmark, not a test: nothing here asserts a time.
#include <dirent.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/comm.h"
#include "nccl.h"
#include "perf/common/world.h"

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

int openFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n - 3;  // ".", ".." and the directory's own descriptor
}

double peakRssMiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;  // kilobytes on Linux
}

struct RankStats {
  size_t links = 0;
  uint64_t messages = 0;
  ncclResult_t result = ncclSuccess;
};

struct Phases {
  double init = 0, allreduce = 0, destroy = 0;
};

/// Fills `stats` from a live communicator (internal view: links made and bootstrap messages sent).
RankStats statsOf(ncclComm_t comm) {
  RankStats s;
  s.links = comm->links.table.size();
  s.messages = comm->bootstrap ? comm->bootstrap->messagesSent() : 0;
  return s;
}

bool runOne(ncclComm_t comm, size_t bytes, int rank, int nranks) {
  std::vector<float> buf(bytes / sizeof(float), static_cast<float>(rank + 1));
  if (ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr) != ncclSuccess) return false;
  const float want = static_cast<float>(nranks) * static_cast<float>(nranks + 1) / 2;
  return buf.empty() || (buf.front() == want && buf.back() == want);
}

void report(const char* mode, int ranks, int ranksHere, const Phases& t, double rssMiB, double fdsPerRank,
            const std::vector<RankStats>& stats) {
  size_t linksMax = 0, linksSum = 0;
  uint64_t msgMax = 0, msgSum = 0;
  for (const RankStats& s : stats) {
    linksMax = std::max(linksMax, s.links);
    linksSum += s.links;
    msgMax = std::max(msgMax, s.messages);
    msgSum += s.messages;
  }
  const double n = static_cast<double>(std::max<size_t>(1, stats.size()));
  std::printf("%-8s %6d %8.2f %8.2f %10.1f %8.2f %9.1f %9.2f %8.2f %6.1f/%-4zu %7.1f/%-4llu\n", mode, ranks,
              t.init + t.allreduce + t.destroy, t.init, t.allreduce * 1e3, t.destroy, rssMiB, rssMiB / ranksHere,
              fdsPerRank, static_cast<double>(linksSum) / n, linksMax, static_cast<double>(msgSum) / n,
              static_cast<unsigned long long>(msgMax));
}

void header() {
  std::printf("# %-6s %6s %8s %8s %10s %8s %9s %9s %8s %11s %12s\n", "mode", "ranks", "wall_s", "init_s", "allred_ms",
              "destr_s", "rss_MiB", "MiB/rank", "fds/rank", "links avg/max", "bootmsg avg/max");
}

int threads(int n, size_t bytes) {
  const int fds0 = openFds();  // before the root's listener, which closes once every rank joined
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return std::fprintf(stderr, "ncclGetUniqueId failed\n"), 1;
  std::vector<ncclComm_t> comms(static_cast<size_t>(n), nullptr);
  std::vector<RankStats> stats(static_cast<size_t>(n));
  std::atomic<int> inited{0}, reduced{0}, bad{0};
  Phases t;
  std::atomic<double> initDone{0}, reduceDone{0};
  const auto start = Clock::now();
  // Each rank's thread runs every phase; the phases are timed from the first start to the last finish.
  std::vector<std::thread> workers;
  std::atomic<int> fdsAtPeak{0};
  for (int r = 0; r < n; ++r)
    workers.emplace_back([&, r] {
      ncclComm_t& c = comms[static_cast<size_t>(r)];
      RankStats& s = stats[static_cast<size_t>(r)];
      s.result = ncclCommInitRank(&c, n, id, r);
      if (s.result != ncclSuccess) {
        ++bad;
        return;
      }
      if (++inited == n) initDone = secondsSince(start);
      while (inited.load() < n && bad.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      if (!runOne(c, bytes, r, n)) ++bad;
      s = statsOf(c);
      if (++reduced == n) {
        reduceDone = secondsSince(start);
        fdsAtPeak = openFds();
      }
      while (reduced.load() < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ncclCommDestroy(c);
    });
  for (std::thread& w : workers) w.join();
  const double total = secondsSince(start);
  if (bad.load() != 0) return std::fprintf(stderr, "scale_bench: %d rank(s) failed: %s\n", bad.load(), ncclGetLastError(nullptr)), 1;
  t.init = initDone;
  t.allreduce = reduceDone - initDone;
  t.destroy = total - reduceDone;
  report("threads", n, n, t, peakRssMiB(), static_cast<double>(fdsAtPeak.load() - fds0) / n, stats);
  return 0;
}

int procs(size_t bytes) {
  atl::perf::World w;
  std::string error;
  if (!atl::perf::discoverWorld(&w, &error)) return std::fprintf(stderr, "scale_bench: %s\n", error.c_str()), 1;
  const int fds0 = openFds();
  const auto start = Clock::now();
  ncclComm_t comm = nullptr;
  if (ncclCommInitRank(&comm, w.nprocs, w.id, w.proc) != ncclSuccess)
    return std::fprintf(stderr, "scale_bench: rank %d: init failed: %s\n", w.proc, ncclGetLastError(nullptr)), 1;
  Phases t;
  t.init = secondsSince(start);
  atl::perf::retireIdFile(w);
  const auto r0 = Clock::now();
  if (!runOne(comm, bytes, w.proc, w.nprocs))
    return std::fprintf(stderr, "scale_bench: rank %d: all-reduce failed: %s\n", w.proc, ncclGetLastError(nullptr)), 1;
  t.allreduce = secondsSince(r0);
  const int fds = openFds() - fds0;
  std::vector<RankStats> stats{statsOf(comm)};
  const auto d0 = Clock::now();
  ncclCommDestroy(comm);
  t.destroy = secondsSince(d0);
  // One line per rank; perf/scale/run_scale.sh aggregates them and times the whole job.
  if (w.proc == 0) header();
  report("process", w.nprocs, 1, t, peakRssMiB(), fds, stats);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int nthreads = 0;
  bool processMode = false;
  size_t bytes = 1 << 20;
  bool quiet = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) nthreads = std::atoi(argv[++i]);
    else if (a == "--procs") processMode = true;
    else if (a == "--bytes" && i + 1 < argc) bytes = std::strtoull(argv[++i], nullptr, 0);
    else if (a == "--no-header") quiet = true;
    else {
      std::fprintf(stderr, "usage: scale_bench --threads N | --procs  [--bytes B] [--no-header]\n");
      return 2;
    }
  }
  if (processMode) return procs(bytes);
  if (nthreads < 1) return std::fprintf(stderr, "scale_bench: --threads N (N >= 1) or --procs\n"), 2;
  if (!quiet) header();
  return threads(nthreads, bytes);
}
