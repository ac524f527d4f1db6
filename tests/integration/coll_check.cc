// Collective correctness driver: checks every collective x datatype x op x count x placement x root
// against a reference computed here, using the public NCCL API (and, for --expect-algo, the
// library's per-call report of the algorithm that ran, core/call_report.h).
//
//   coll_check --threads N   N threads, each ncclCommInitRank
//   coll_check --initall N   one thread, ncclCommInitAll, every call grouped over all comms
//   coll_check --procs N     N child processes (fork+exec before any id exists); the parent calls
//                            ncclGetUniqueId, so it hosts the rendezvous root, and passes the id
//                            hex-encoded through a pipe
// Subsets: --colls a,b  --types a,b  --ops a,b  --counts 0,5,77  --timeout SECONDS
// --expect-algo SPEC: fail any call that ran another algorithm (parseExpectAlgo, coll_cases.h).
// Sweep size: --quick (6 counts), --lean (the quick counts plus 65537 for a third of the datatypes:
// the sanitizer jobs' sweep), default (11 counts; roots and big-count operators rotate through the
// sweep), --full (every root and operator at every count).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/params.h"
#include "core/device_intranode.h"
#include "core/device_ipc_cache.h"
#include "device/device.h"
#include "nccl.h"
#include "tests/integration/coll_cases.h"

namespace collcheck {
namespace {

enum class Mode { kNone, kThreads, kInitAll, kProcs, kChild };

bool gDeviceStreams = false;  // --device

struct Args {
  Mode mode = Mode::kNone;
  int nranks = 0;
  int childRank = -1;
  int idFd = -1, resultFd = -1;
  double timeoutSec = 600;
  Options opt;
  std::vector<std::string> passthrough;  // forwarded to children in --procs mode
};

std::vector<std::string> splitList(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t e = s.find(',', pos);
    if (e == std::string::npos) e = s.size();
    if (e > pos) out.push_back(s.substr(pos, e - pos));
    pos = e + 1;
  }
  return out;
}

template <size_t N>
bool selectNames(const std::string& list, const char* const (&names)[N], std::vector<bool>* sel) {
  sel->assign(N, false);
  for (const std::string& item : splitList(list)) {
    bool found = false;
    for (size_t i = 0; i < N; ++i)
      if (item == names[i]) (*sel)[i] = found = true;
    if (!found) {
      std::fprintf(stderr, "coll_check: unknown name '%s'\n", item.c_str());
      return false;
    }
  }
  return true;
}

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: coll_check (--threads N | --initall N | --procs N) [--colls LIST] [--types LIST]\n"
               "                  [--ops LIST] [--counts LIST] [--quick|--lean|--full] [--timeout SEC] [--verbose]\n"
               "                  [--nccl-mem]  (buffers from ncclMemAlloc)\n"
               "                  [--device]    (device buffers and a stream per rank: ATOLL_DEVICE=emu or cuda)\n"
               "                  [--expect-algo ALGO[,COLL=ALGO...]]\n"
               "                  [--expect-device-direct]  (every eligible call read peers' device buffers in place)\n");
  std::exit(2);
}

Args parseArgs(int argc, char** argv) {
  Args a;
  const char* typeNames[ncclNumTypes];
  for (int i = 0; i < ncclNumTypes; ++i) typeNames[i] = kTypes[i].name;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage();
      return argv[++i];
    };
    auto forward = [&](const std::string& v) {
      a.passthrough.push_back(s);
      a.passthrough.push_back(v);
    };
    if (s == "--threads" || s == "--initall" || s == "--procs") {
      a.mode = s == "--threads" ? Mode::kThreads : s == "--initall" ? Mode::kInitAll : Mode::kProcs;
      a.nranks = std::atoi(next().c_str());
    } else if (s == "--child") {  // internal: --child RANK NRANKS IDFD RESULTFD
      a.mode = Mode::kChild;
      a.childRank = std::atoi(next().c_str());
      a.nranks = std::atoi(next().c_str());
      a.idFd = std::atoi(next().c_str());
      a.resultFd = std::atoi(next().c_str());
    } else if (s == "--colls") {
      std::string v = next();
      forward(v);
      if (!selectNames(v, kCollNames, &a.opt.colls)) usage();
    } else if (s == "--types") {
      std::string v = next();
      forward(v);
      std::vector<bool> sel;
      bool ok = true;
      sel.assign(ncclNumTypes, false);
      for (const std::string& item : splitList(v)) {
        bool found = false;
        for (int t = 0; t < ncclNumTypes; ++t)
          if (item == typeNames[t]) sel[static_cast<size_t>(t)] = found = true;
        if (!found) {
          std::fprintf(stderr, "coll_check: unknown type '%s'\n", item.c_str());
          ok = false;
        }
      }
      if (!ok) usage();
      a.opt.types = sel;
    } else if (s == "--ops") {
      std::string v = next();
      forward(v);
      if (!selectNames(v, kOpNames, &a.opt.ops)) usage();
    } else if (s == "--counts") {
      std::string v = next();
      forward(v);
      for (const std::string& item : splitList(v)) a.opt.counts.push_back(std::strtoull(item.c_str(), nullptr, 10));
    } else if (s == "--timeout") {
      std::string v = next();
      forward(v);
      a.timeoutSec = std::atof(v.c_str());
    } else if (s == "--expect-algo") {
      std::string v = next();
      forward(v);
      if (!parseExpectAlgo(v, &a.opt.expectAlgo)) {
        std::fprintf(stderr, "coll_check: unknown collective in --expect-algo '%s'\n", v.c_str());
        usage();
      }
    } else if (s == "--quick" || s == "--lean" || s == "--full") {
      a.opt.level = s == "--quick" ? Level::kQuick : s == "--lean" ? Level::kLean : Level::kFull;
      a.passthrough.push_back(s);
    } else if (s == "--nccl-mem") {
      useNcclMem(true);
      a.passthrough.push_back(s);
    } else if (s == "--device") {
      useDevice(true);
      gDeviceStreams = true;
      a.passthrough.push_back(s);
    } else if (s == "--expect-device-direct") {
      a.opt.expectDeviceDirect = true;
      a.passthrough.push_back(s);
    } else if (s == "--verbose") {
      a.opt.verbose = true;
      a.passthrough.push_back(s);
    } else {
      usage();
    }
  }
  if (a.mode == Mode::kNone || a.nranks < 1) usage();
  return a;
}

// Kills the process (and says where it was) if the run exceeds its time limit: a hang in the
// library must fail the test, not stall ctest.
class Watchdog {
 public:
  explicit Watchdog(double seconds) : thread_([this, seconds] { run(seconds); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      done_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  void run(double seconds) {
    std::unique_lock<std::mutex> lk(mu_);
    if (cv_.wait_for(lk, std::chrono::duration<double>(seconds), [this] { return done_; })) return;
    std::printf("TIMEOUT after %.0f s; running: %s\n0 passed, 1 failed\n", seconds, currentCase().c_str());
    std::fflush(stdout);
    _exit(3);
  }
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

std::string toHex(const ncclUniqueId& id) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i) {
    const unsigned char b = static_cast<unsigned char>(id.internal[i]);
    s += d[b >> 4];
    s += d[b & 15];
  }
  return s;
}

bool fromHex(const std::string& s, ncclUniqueId* id) {
  if (s.size() < 2 * NCCL_UNIQUE_ID_BYTES) return false;
  auto nib = [](char c) { return c >= 'a' ? c - 'a' + 10 : c - '0'; };
  for (int i = 0; i < NCCL_UNIQUE_ID_BYTES; ++i)
    id->internal[i] = static_cast<char>(nib(s[2 * static_cast<size_t>(i)]) << 4 | nib(s[2 * static_cast<size_t>(i) + 1]));
  return true;
}

// Runs `fn(local index)` for every local rank, inside one group when the world is grouped.
template <typename Fn>
ncclResult_t forRanks(const World& w, Fn fn, std::string* err) {
  if (w.grouped) ncclGroupStart();
  ncclResult_t first = ncclSuccess;
  for (size_t l = 0; l < w.ranks.size(); ++l) {
    ncclResult_t r = fn(l);
    if (r != ncclSuccess && first == ncclSuccess) {
      first = r;
      *err = std::string("rank ") + std::to_string(w.ranks[l]) + ": " + ncclGetErrorString(r) + " / " +
             ncclGetLastError(w.comms[l]);
    }
  }
  if (w.grouped) {
    ncclResult_t r = ncclGroupEnd();
    if (r != ncclSuccess && first == ncclSuccess) {
      first = r;
      *err = std::string("ncclGroupEnd: ") + ncclGetErrorString(r) + " / " + ncclGetLastError(nullptr);
    }
  }
  return first;
}

std::atomic<bool> gSplitBroken{false};

void expect(Stats& st, bool ok, const std::string& what) {
  if (ok) {
    st.pass();
  } else {
    st.fail(what);
  }
}

// All-reduce (int32 sum of rank-dependent values) on `w`; `parentRanks` names each member's
// rank in the parent so the expected value is computed from it.
void checkAllReduceOn(const World& w, const std::vector<int>& parentRanks, const char* label, Stats& st) {
  const size_t count = 1031;
  std::vector<std::vector<int32_t>> bufs(w.ranks.size(), std::vector<int32_t>(count));
  for (size_t l = 0; l < w.ranks.size(); ++l)
    for (size_t i = 0; i < count; ++i) bufs[l][i] = (parentRanks[static_cast<size_t>(w.ranks[l])] + 1) * static_cast<int32_t>(i % 7 + 1);
  std::string err;
  ncclResult_t r = forRanks(
      w,
      [&](size_t l) {
        return ncclAllReduce(bufs[l].data(), bufs[l].data(), count, ncclInt32, ncclSum, w.comms[l], nullptr);
      },
      &err);
  expect(st, r == ncclSuccess, std::string(label) + ": allreduce failed: " + err);
  if (r != ncclSuccess) return;
  int64_t rankSum = 0;
  for (int pr : parentRanks) rankSum += pr + 1;
  for (size_t l = 0; l < w.ranks.size(); ++l) {
    size_t bad = count;
    for (size_t i = 0; i < count && bad == count; ++i)
      if (bufs[l][i] != rankSum * static_cast<int32_t>(i % 7 + 1)) bad = i;
    expect(st, bad == count,
           std::string(label) + ": allreduce mismatch on rank " + std::to_string(w.ranks[l]) + " index " +
               std::to_string(bad));
  }
}

// Comm queries, ncclCommSplit (colors, keys, NOCOLOR) and ncclCommAbort on an idle comm.
void checkCommFeatures(const World& w, Stats& st) {
  const int n = w.nranks;
  const size_t L = w.ranks.size();
  setCurrentCase("comm queries");
  for (size_t l = 0; l < L; ++l) {
    int count = -1, rank = -1, dev = -2;
    ncclResult_t a = ncclCommCount(w.comms[l], &count), b = ncclCommUserRank(w.comms[l], &rank),
                 c = ncclCommCuDevice(w.comms[l], &dev);
    ncclResult_t async = ncclInternalError;
    ncclResult_t d = ncclCommGetAsyncError(w.comms[l], &async);
    char buf[200];
    std::snprintf(buf, sizeof buf, "comm queries rank %d: count rc=%d val=%d, userrank rc=%d val=%d, cudevice rc=%d, asyncerror rc=%d val=%d",
                  w.ranks[l], a, count, b, rank, c, d, async);
    expect(st, a == ncclSuccess && count == n && b == ncclSuccess && rank == w.ranks[l] && c == ncclSuccess &&
                   d == ncclSuccess && async == ncclSuccess,
           buf);
  }

  // Split by parity with keys that reverse the order inside each color.
  setCurrentCase("ncclCommSplit even/odd");
  std::vector<ncclComm_t> sub(L, nullptr);
  std::string err;
  ncclResult_t r = forRanks(
      w, [&](size_t l) { return ncclCommSplit(w.comms[l], w.ranks[l] % 2, n - w.ranks[l], &sub[l], nullptr); }, &err);
  expect(st, r == ncclSuccess, "ncclCommSplit even/odd: " + err);
  if (r != ncclSuccess) {
    // Each further split would only wait out the same bootstrap timeout; keep the sweep's time.
    std::printf("FAIL ncclCommSplit failed: skipping the remaining split and abort checks\n");
    gSplitBroken = true;
    return;
  }
  {
    bool allPresent = true;
    for (int color = 0; color < 2; ++color) {
      std::vector<int> members;  // parent ranks of this color in new-rank order (descending)
      for (int p = n - 1; p >= 0; --p)
        if (p % 2 == color) members.push_back(p);
      World sw;
      sw.nranks = static_cast<int>(members.size());
      sw.grouped = w.grouped;
      for (size_t l = 0; l < L; ++l) {
        if (w.ranks[l] % 2 != color) continue;
        int cnt = -1, nr = -1;
        if (!sub[l]) {
          allPresent = false;
          continue;
        }
        ncclCommCount(sub[l], &cnt);
        ncclCommUserRank(sub[l], &nr);
        int want = 0;
        while (members[static_cast<size_t>(want)] != w.ranks[l]) ++want;
        char buf[160];
        std::snprintf(buf, sizeof buf, "split color %d parent rank %d: count %d (want %d), rank %d (want %d)", color,
                      w.ranks[l], cnt, sw.nranks, nr, want);
        expect(st, cnt == sw.nranks && nr == want, buf);
        sw.ranks.push_back(nr);
        sw.comms.push_back(sub[l]);
      }
      if (!sw.ranks.empty() && allPresent) checkAllReduceOn(sw, members, "split comm", st);
    }
    expect(st, allPresent, "ncclCommSplit returned a NULL comm for a colored rank");
    setCurrentCase("destroy split comms");
    r = forRanks(w, [&](size_t l) { return sub[l] ? ncclCommFinalize(sub[l]) : ncclSuccess; }, &err);
    expect(st, r == ncclSuccess, "ncclCommFinalize(split comm): " + err);
    for (size_t l = 0; l < L; ++l)
      if (sub[l]) expect(st, ncclCommDestroy(sub[l]) == ncclSuccess, "ncclCommDestroy(split comm)");
  }

  // Abort an idle duplicate: every rank has finished creating it (the parent all-reduce after the
  // split proves that) before anyone aborts.
  setCurrentCase("ncclCommAbort idle comm");
  std::vector<ncclComm_t> dup(L, nullptr);
  r = forRanks(w, [&](size_t l) { return ncclCommSplit(w.comms[l], 0, w.ranks[l], &dup[l], nullptr); }, &err);
  expect(st, r == ncclSuccess, "ncclCommSplit dup: " + err);
  std::vector<int> all;
  for (int p = 0; p < n; ++p) all.push_back(p);
  checkAllReduceOn(w, all, "parent comm after split", st);
  for (size_t l = 0; l < L; ++l)
    if (dup[l]) expect(st, ncclCommAbort(dup[l]) == ncclSuccess, "ncclCommAbort(idle comm)");
  checkAllReduceOn(w, all, "parent comm after abort of a child comm", st);
}

// NCCL_SPLIT_NOCOLOR, then one more split of the same parent: ranks that opted out must stay in
// step with the others for later splits.
void checkNoColorSplit(const World& w, Stats& st) {
  if (gSplitBroken) return;
  const int n = w.nranks;
  const size_t L = w.ranks.size();
  std::string err;
  ncclResult_t r;
  // NCCL_SPLIT_NOCOLOR: rank 0 opts out and must get NULL; the others form one comm (key 0 keeps
  // the parent order).
  setCurrentCase("ncclCommSplit NOCOLOR");
  std::vector<ncclComm_t> rest(L, nullptr);
  for (size_t l = 0; l < L; ++l) rest[l] = reinterpret_cast<ncclComm_t>(0x1);  // must be overwritten
  r = forRanks(
      w,
      [&](size_t l) {
        return ncclCommSplit(w.comms[l], w.ranks[l] == 0 ? NCCL_SPLIT_NOCOLOR : 7, 0, &rest[l], nullptr);
      },
      &err);
  expect(st, r == ncclSuccess, "ncclCommSplit NOCOLOR: " + err);
  if (r == ncclSuccess) {
    World rw;
    rw.nranks = n - 1;
    rw.grouped = w.grouped;
    std::vector<int> members;
    for (int p = 1; p < n; ++p) members.push_back(p);
    bool ok = true;
    for (size_t l = 0; l < L; ++l) {
      if (w.ranks[l] == 0) {
        expect(st, rest[l] == nullptr, "NCCL_SPLIT_NOCOLOR did not return a NULL comm");
        continue;
      }
      int cnt = -1, nr = -1;
      if (!rest[l]) {
        ok = false;
        continue;
      }
      ncclCommCount(rest[l], &cnt);
      ncclCommUserRank(rest[l], &nr);
      expect(st, cnt == n - 1 && nr == w.ranks[l] - 1,
             "NOCOLOR split: rank " + std::to_string(w.ranks[l]) + " got count " + std::to_string(cnt) + " rank " +
                 std::to_string(nr));
      rw.ranks.push_back(nr);
      rw.comms.push_back(rest[l]);
    }
    expect(st, ok, "NOCOLOR split returned NULL for a colored rank");
    if (ok && !rw.ranks.empty()) checkAllReduceOn(rw, members, "nocolor split comm", st);
    World fw = rw;  // finalize only the non-null comms
    if (ok && !fw.ranks.empty()) {
      r = forRanks(fw, [&](size_t l) { return ncclCommFinalize(fw.comms[l]); }, &err);
      expect(st, r == ncclSuccess, "ncclCommFinalize(nocolor comm): " + err);
      for (ncclComm_t c : fw.comms) expect(st, ncclCommDestroy(c) == ncclSuccess, "ncclCommDestroy(nocolor comm)");
    }
  }

  setCurrentCase("ncclCommSplit after a NOCOLOR split");
  std::vector<ncclComm_t> again(L, nullptr);
  r = forRanks(w, [&](size_t l) { return ncclCommSplit(w.comms[l], 3, 0, &again[l], nullptr); }, &err);
  expect(st, r == ncclSuccess, "ncclCommSplit after NOCOLOR split: " + err);
  bool all = r == ncclSuccess;
  for (ncclComm_t c : again) all = all && c != nullptr;
  if (all) {
    World aw = w;
    aw.comms = again;
    std::vector<int> ident;
    for (int p = 0; p < n; ++p) ident.push_back(p);
    checkAllReduceOn(aw, ident, "split after NOCOLOR split", st);
    r = forRanks(aw, [&](size_t l) { return ncclCommFinalize(aw.comms[l]); }, &err);
    expect(st, r == ncclSuccess, "ncclCommFinalize(split after NOCOLOR): " + err);
    for (ncclComm_t c : again) expect(st, ncclCommDestroy(c) == ncclSuccess, "ncclCommDestroy(split after NOCOLOR)");
  }
}

// Everything one world (the local ranks of this thread) runs, then finalize and destroy.
void runWorld(const World& given, const Options& opt, Stats& st) {
  World w = given;
  w.expectDeviceDirect = opt.expectDeviceDirect;
  // --device: a stream per rank, made by the library's backend, so calls are queued (on a default
  // stream they would be complete on return, core/device_proxy.h). The emulator's are filled late
  // (coll_cases.cc).
  const atl::device::Device* dev = gDeviceStreams && atl::device::select().ok() ? *atl::device::select() : nullptr;
  if (dev != nullptr && !dev->streamOrdered()) dev = nullptr;  // the host backend has no streams
  std::vector<int> devs(w.ranks.size(), 0);
  for (size_t l = 0; dev != nullptr && l < w.ranks.size(); ++l) {
    ncclCommCuDevice(w.comms[l], &devs[l]);
    atl::Result<cudaStream_t> s = dev->createStream(devs[l]);
    expect(st, s.ok(), "creating a stream: " + atl::lastErrorMessage());
    w.streams.push_back(s.ok() ? *s : nullptr);
  }
  checkCommFeatures(w, st);
  const std::vector<Case> cases = buildCases(opt, w.nranks);
  for (const Case& c : cases) {
    if (w.ranks[0] == 0) setCurrentCase(c.describe());
    if (opt.verbose && w.ranks[0] == 0) std::printf("# %s\n", c.describe().c_str());
    runCase(w, c, st);
  }
  checkNoColorSplit(w, st);
  for (size_t l = 0; opt.expectDeviceDirect && l < w.ranks.size(); ++l)
    expect(st, atl::deviceIntraNodeCalls(w.comms[l]) > 0,
           "rank " + std::to_string(w.ranks[l]) + ": no collective read its peers' device buffers in place");
  if (opt.expectDeviceDirect) {
    // Every case makes new buffers, so the process's mapping cache must have closed the idle ones
    // beyond its limit as it went (core/device_ipc_cache.h).
    const atl::DeviceIpcCache& cache = atl::DeviceIpcCache::process();
    const int64_t limit = atl::params::getInt(atl::params::Id::DeviceIpcCache);
    expect(st, static_cast<int64_t>(cache.mapped()) <= std::max<int64_t>(limit, 0),
           "peer mappings left open: " + std::to_string(cache.mapped()) + " (limit " + std::to_string(limit) + ", " +
               std::to_string(cache.imports()) + " opened)");
  }
  setCurrentCase("finalize/destroy");
  std::string err;
  ncclResult_t r = forRanks(w, [&](size_t l) { return ncclCommFinalize(w.comms[l]); }, &err);
  expect(st, r == ncclSuccess, "ncclCommFinalize: " + err);
  for (size_t l = 0; l < w.ranks.size(); ++l)
    expect(st, ncclCommDestroy(w.comms[l]) == ncclSuccess, "ncclCommDestroy rank " + std::to_string(w.ranks[l]));
  for (size_t l = 0; l < w.streams.size(); ++l)
    if (w.streams[l] != nullptr) expect(st, dev->destroyStream(devs[l], w.streams[l]).ok(), "destroying a stream");
}

void initOne(int n, const ncclUniqueId& id, int rank, const Options& opt, Stats& st) {
  World w;
  w.nranks = n;
  w.ranks = {rank};
  w.comms = {nullptr};
  w.expectAlgo = opt.expectAlgo;
  ncclResult_t r = ncclCommInitRank(&w.comms[0], n, id, rank);
  if (r != ncclSuccess) {
    st.fail("ncclCommInitRank rank " + std::to_string(rank) + ": " + ncclGetErrorString(r) + " / " +
            ncclGetLastError(nullptr));
    return;
  }
  runWorld(w, opt, st);
}

int finish(const Stats& st) {
  std::printf("%ld passed, %ld failed\n", st.passed(), st.failed());
  std::fflush(stdout);
  return st.failed() == 0 && st.passed() > 0 ? 0 : 1;
}

int runThreads(const Args& a, Stats& st) {
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    st.fail("ncclGetUniqueId failed");
    return finish(st);
  }
  std::vector<std::thread> th;
  for (int r = 0; r < a.nranks; ++r) th.emplace_back([&, r] { initOne(a.nranks, id, r, a.opt, st); });
  for (auto& t : th) t.join();
  return finish(st);
}

int runInitAll(const Args& a, Stats& st) {
  World w;
  w.nranks = a.nranks;
  w.grouped = true;
  w.expectAlgo = a.opt.expectAlgo;
  w.comms.assign(static_cast<size_t>(a.nranks), nullptr);
  for (int r = 0; r < a.nranks; ++r) w.ranks.push_back(r);
  ncclResult_t r = ncclCommInitAll(w.comms.data(), a.nranks, nullptr);
  if (r != ncclSuccess) {
    st.fail(std::string("ncclCommInitAll: ") + ncclGetErrorString(r) + " / " + ncclGetLastError(nullptr));
    return finish(st);
  }
  runWorld(w, a.opt, st);
  return finish(st);
}

int runChild(const Args& a, Stats& st) {
  std::string hex;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  char buf[512];
  while (hex.size() < 2 * NCCL_UNIQUE_ID_BYTES && std::chrono::steady_clock::now() < deadline) {
    pollfd p{a.idFd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    ssize_t got = read(a.idFd, buf, sizeof buf);
    if (got <= 0) break;
    hex.append(buf, static_cast<size_t>(got));
  }
  close(a.idFd);
  ncclUniqueId id;
  if (!fromHex(hex, &id)) {
    st.fail("child " + std::to_string(a.childRank) + ": no unique id from the parent");
  } else {
    initOne(a.nranks, id, a.childRank, a.opt, st);
  }
  const std::string line = std::to_string(st.passed()) + " " + std::to_string(st.failed()) + "\n";
  if (write(a.resultFd, line.data(), line.size()) < 0) std::perror("write result");
  close(a.resultFd);
  return st.failed() == 0 ? 0 : 1;
}

int runProcs(const Args& a, char** argv, Stats& st) {
  const int n = a.nranks;
  std::vector<pid_t> pids;
  std::vector<int> idWrite, resultRead;
  // Children first: the parent must not fork once ncclGetUniqueId has started its rendezvous thread.
  for (int r = 0; r < n; ++r) {
    int idp[2], resp[2];
    if (pipe(idp) != 0 || pipe(resp) != 0) {
      std::perror("pipe");
      return 1;
    }
    pid_t pid = fork();
    if (pid == 0) {
      close(idp[1]);
      close(resp[0]);
      for (int fd : idWrite) close(fd);
      for (int fd : resultRead) close(fd);
      std::vector<std::string> args = {argv[0], "--child", std::to_string(r), std::to_string(n),
                                       std::to_string(idp[0]), std::to_string(resp[1])};
      args.insert(args.end(), a.passthrough.begin(), a.passthrough.end());
      std::vector<char*> cargs;
      for (auto& s : args) cargs.push_back(s.data());
      cargs.push_back(nullptr);
      execv("/proc/self/exe", cargs.data());
      std::perror("execv");
      _exit(127);
    }
    close(idp[0]);
    close(resp[1]);
    pids.push_back(pid);
    idWrite.push_back(idp[1]);
    resultRead.push_back(resp[0]);
  }
  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  const std::string hex = r == ncclSuccess ? toHex(id) : std::string();
  if (r != ncclSuccess) st.fail(std::string("ncclGetUniqueId: ") + ncclGetErrorString(r));
  for (int fd : idWrite) {
    if (!hex.empty() && write(fd, hex.data(), hex.size()) != static_cast<ssize_t>(hex.size())) std::perror("write id");
    close(fd);
  }

  // Wait for every child; on the first failure or at the deadline kill the rest.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.timeoutSec + 30);
  std::vector<bool> done(static_cast<size_t>(n), false);
  int remaining = n;
  bool killed = false;
  while (remaining > 0) {
    bool progressed = false;
    for (int i = 0; i < n; ++i) {
      if (done[static_cast<size_t>(i)]) continue;
      int status = 0;
      if (waitpid(pids[static_cast<size_t>(i)], &status, WNOHANG) != pids[static_cast<size_t>(i)]) continue;
      done[static_cast<size_t>(i)] = true;
      --remaining;
      progressed = true;
      const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (!ok) {
        if (!killed)
          st.fail("child rank " + std::to_string(i) +
                  (WIFEXITED(status) ? " exited with " + std::to_string(WEXITSTATUS(status))
                                     : " killed by signal " + std::to_string(WTERMSIG(status))));
        if (!killed && WIFEXITED(status) && WEXITSTATUS(status) != 1) {
          for (int j = 0; j < n; ++j)
            if (!done[static_cast<size_t>(j)]) kill(pids[static_cast<size_t>(j)], SIGKILL);
          killed = true;
        }
      }
    }
    if (!killed && std::chrono::steady_clock::now() > deadline) {
      st.fail("children exceeded the timeout; killing them");
      for (int j = 0; j < n; ++j)
        if (!done[static_cast<size_t>(j)]) kill(pids[static_cast<size_t>(j)], SIGKILL);
      killed = true;
    }
    if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // Sum the children's counts.
  long passed = 0, failed = 0;
  for (int fd : resultRead) {
    char buf[64] = {0};
    ssize_t got = read(fd, buf, sizeof buf - 1);
    long p = 0, f = 0;
    if (got > 0 && std::sscanf(buf, "%ld %ld", &p, &f) == 2) {
      passed += p;
      failed += f;
    }
    close(fd);
  }
  std::printf("%ld passed, %ld failed\n", passed + st.passed(), failed + st.failed());
  return failed + st.failed() == 0 && passed > 0 ? 0 : 1;
}

}  // namespace
}  // namespace collcheck

int main(int argc, char** argv) {
  using namespace collcheck;
  Args a = parseArgs(argc, argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Stats st;
  st.setMaxPrinted(a.opt.maxFailuresPrinted);
  if (a.mode == Mode::kProcs) return runProcs(a, argv, st);  // the parent has its own deadline
  Watchdog dog(a.timeoutSec);
  switch (a.mode) {
    case Mode::kThreads: return runThreads(a, st);
    case Mode::kInitAll: return runInitAll(a, st);
    case Mode::kChild: return runChild(a, st);
    default: return 2;
  }
}
