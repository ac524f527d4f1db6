// Test cases of the collective correctness driver and the machinery that runs them on a set of
// local ranks (one rank per thread/process, or every rank from one thread inside a group).
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <vector>

#include "nccl.h"
#include "tests/integration/coll_types.h"

namespace collcheck {

enum class Coll {
  kAllReduce,
  kBroadcast,
  kBcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kGather,
  kScatter,
  kSendRecvRing,
  kSendRecvAll,
  kCount
};
inline const char* kCollNames[static_cast<int>(Coll::kCount)] = {
    "allreduce", "broadcast", "bcast",   "reduce",       "allgather",    "reducescatter",
    "alltoall",  "gather",    "scatter", "sendrecvring", "sendrecvall"};

inline bool isReduction(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter; }
inline bool isRooted(Coll c) {
  return c == Coll::kBroadcast || c == Coll::kBcast || c == Coll::kReduce || c == Coll::kGather || c == Coll::kScatter;
}

struct Case {
  Coll coll;
  ncclDataType_t dt;
  Op op;  // kSum for data-movement collectives (unused)
  size_t count;
  bool inplace;
  int root;
  ncclScalarResidence_t residence;
  uint64_t seed;
  std::string describe() const;
};

// kQuick: fewer counts; kLean: kQuick's plus one large count for a third of the datatypes (the
// sanitizer jobs); kStandard: every count, roots and big-count operators rotated; kFull: all.
enum class Level { kQuick, kLean, kStandard, kFull };

struct Options {
  std::vector<bool> colls = std::vector<bool>(static_cast<size_t>(Coll::kCount), true);
  std::vector<bool> types = std::vector<bool>(ncclNumTypes, true);
  std::vector<bool> ops = std::vector<bool>(kNumOps, true);
  std::vector<size_t> counts;  // empty: the default list for the mode
  Level level = Level::kStandard;
  bool verbose = false;
  int maxFailuresPrinted = 20;
  // --expect-algo: the algorithm each collective must report having run (core/call_report.h),
  // indexed by Coll; empty entries are not checked.
  std::vector<std::string> expectAlgo = std::vector<std::string>(static_cast<size_t>(Coll::kCount));
  // --expect-device-direct: every all-reduce, reduce-scatter, all-gather, broadcast and reduce of
  // a non-zero count (PreMulSum aside) must report the direct device path (core/device_intranode.h)
  // rather than staging, so a silent fallback fails the case.
  bool expectDeviceDirect = false;
};

// Parses --expect-algo's value: "ALGO" for every collective with a choice of algorithm, and
// "COLL=ALGO" entries that override it, comma-separated ("ring,allreduce=tree"). All-to-all, gather
// and scatter have one schedule, reported as "direct"; bcast follows broadcast; send/recv is not
// checked. False on an unknown collective.
bool parseExpectAlgo(const std::string& spec, std::vector<std::string>* out);

std::vector<Case> buildCases(const Options& opt, int nranks);

// Pass/fail bookkeeping shared by every local rank (thread-safe).
class Stats {
 public:
  void pass() { passed_.fetch_add(1); }
  // Records one failure; `detail` is printed only for the first few.
  void fail(const std::string& detail);
  long passed() const { return passed_.load(); }
  long failed() const { return failed_.load(); }
  void setMaxPrinted(int n) { maxPrinted_ = n; }

 private:
  std::atomic<long> passed_{0}, failed_{0};
  std::mutex mu_;
  int printed_ = 0;
  int maxPrinted_ = 20;
};

// The ranks this thread drives. In --threads/--procs mode it holds one rank; in --initall mode it
// holds all of them and every call on them is wrapped in ncclGroupStart/End.
struct World {
  int nranks = 0;
  std::vector<int> ranks;
  std::vector<ncclComm_t> comms;
  bool grouped = false;
  std::vector<std::string> expectAlgo;  // Options::expectAlgo on the communicators the driver made
  std::vector<cudaStream_t> streams;    // --device: one per local rank (empty: the NULL stream)
  bool expectDeviceDirect = false;      // Options::expectDeviceDirect
};

// Runs one case on every local rank and records one pass/fail per (case, rank).
void runCase(const World& w, const Case& c, Stats& stats);

// Buffers from ncclMemAlloc instead of private memory (--nccl-mem).
void useNcclMem(bool on);
// Buffers in device memory of the library's device backend (--device; ATOLL_DEVICE=emu or cuda):
// the checks read host copies that are uploaded before each case and read back after it.
void useDevice(bool on);

// Set by the driver so a watchdog can say what was running when it fired.
void setCurrentCase(const std::string& what);
std::string currentCase();

}  // namespace collcheck
