#include "perf/common/driver.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "perf/common/device_buffers.h"
#include "perf/common/options.h"
#include "perf/common/report.h"
#include "perf/common/tally.h"
#include "perf/common/tool_env.h"
#include "perf/common/values.h"
#include "perf/common/world.h"

namespace atl::perf {
namespace {

constexpr int kExitWrong = 1;
constexpr int kExitUsage = 2;
constexpr int kExitLibrary = 3;
constexpr size_t kRankLineBytes = 192;

[[noreturn]] void die(int code, const char* fmt, ...) {
  std::va_list ap;
  va_start(ap, fmt);
  std::vfprintf(stderr, fmt, ap);
  va_end(ap);
  std::fputc('\n', stderr);
  std::fflush(nullptr);
  // Other threads may be inside the library; skip static destructors.
  std::_Exit(code);
}

struct MemFree {
  void operator()(std::byte* p) const { ncclMemFree(p); }
};

struct Buffer {
  std::unique_ptr<std::byte[]> data;
  std::unique_ptr<std::byte, MemFree> shared;  // -R or -D: from ncclMemAlloc instead
  std::vector<std::byte> mirror;               // -D: what the host writes and reads, copied in and out
  void* handle = nullptr;                      // -R: its ncclCommRegister handle
  size_t bytes = 0;
  /// Returns false when ncclMemAlloc fails. On the device (-D) the caller clears it by an upload.
  bool reserve(size_t n, bool fromNccl, bool device) {
    // One spare element keeps the pointer non-null (and distinct) for zero-byte messages.
    bytes = n + 64;
    if (!fromNccl && !device) {
      data = std::make_unique<std::byte[]>(bytes);
      return true;
    }
    void* p = nullptr;
    if (ncclMemAlloc(&p, bytes) != ncclSuccess) return false;
    shared.reset(static_cast<std::byte*>(p));
    if (device)
      mirror.assign(bytes, std::byte{0});
    else
      std::memset(p, 0, bytes);
    return true;
  }
  /// Where the collective reads and writes.
  std::byte* at(size_t elem, size_t elemSize) const { return (shared ? shared.get() : data.get()) + elem * elemSize; }
  /// Where the host fills patterns and checks results: the buffer itself, or its mirror.
  std::byte* hostAt(size_t elem, size_t elemSize) {
    return mirror.empty() ? at(elem, elemSize) : mirror.data() + elem * elemSize;
  }
};

struct RankState {
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;  // -D: the rank's own, so its calls are queued as on a GPU
  Buffer send;
  Buffer recv;  // also the single buffer of in-place runs
  double scratch[4] = {};
};

enum class Place { OutOfPlace, InPlace };

struct Job {
  const Options& options;
  const CollInfo& coll;
  const World& world;
  int nranks;
  Report* report;   // owned by the process that holds rank 0
  Tally* tally;     // null without checking (-c 0)
  int corruptRank;  // ATOLL_PERF_CORRUPT_RANK, -1 when unset
  const DeviceCalls* device;  // -D; null for host buffers
};

double now(bool cpu) {
  if (cpu) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The ranks one thread drives: with -g > 1 every call is issued for all of them inside one group.
class RankGroup {
 public:
  RankGroup(const Job& job, int firstRank, int count) : job_(job) {
    ranks_.resize(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) ranks_[static_cast<size_t>(i)].rank = firstRank + i;
  }

  void run();
  bool wrongSeen() const { return wrongSeen_; }

 private:
  // Calls call(rank, index) for every rank of the thread, `repeat` times, grouped when that is more
  // than one call (ranks of one thread only progress together inside a group).
  template <class F>
  void forAll(const char* what, F&& call, int repeat = 1) {
    const bool grouped = ranks_.size() > 1 || repeat > 1;
    if (grouped) check(ncclGroupStart(), "ncclGroupStart", ranks_[0]);
    for (int k = 0; k < repeat; ++k) {
      for (size_t i = 0; i < ranks_.size(); ++i) check(call(ranks_[i], i), what, ranks_[i]);
    }
    if (grouped) check(ncclGroupEnd(), what, ranks_[0]);
  }

  void check(ncclResult_t res, const char* what, const RankState& rs) const {
    if (res == ncclSuccess) return;
    const char* last = rs.comm ? ncclGetLastError(rs.comm) : ncclGetLastError(nullptr);
    die(kExitLibrary, "%s: rank %d: %s failed: %s%s%s", job_.coll.tool, rs.rank, what, ncclGetErrorString(res),
        last && *last ? ": " : "", last ? last : "");
  }

  bool isReporter() const { return ranks_[0].rank == 0 && job_.report != nullptr; }

  void init();
  void allocate();
  // -D: the first `bytes` of the host side of `b` to the device, or back; no-ops on host buffers.
  void upload(RankState& rs, Buffer& b, size_t bytes);
  void download(RankState& rs, Buffer& b, size_t bytes);
  void synchronize();
  void shareRankLines();
  void joinTally();
  void combine(double* values, int n, ncclRedOp_t op);
  void barrier();
  void sweep(ncclDataType_t type, ncclRedOp_t op, int root);
  void issueAll(Place place, size_t bytes, ncclDataType_t type, ncclRedOp_t op, int root, int agg);
  double timeIt(Place place, size_t bytes, ncclDataType_t type, ncclRedOp_t op, int root, int iters);
  int64_t verify(Place place, size_t bytes, ncclDataType_t type, ncclRedOp_t op, int root);
  // Zeroes the buffers after a verification so timed loops never reduce values that could overflow.
  void clean(size_t bytes, size_t elemSize);
  Row measure(size_t bytes, ncclDataType_t type, ncclRedOp_t op, int root);
  void showProgress(const char* text) const;

  const Job& job_;
  std::vector<RankState> ranks_;
  std::unique_ptr<Tally::Client> tally_;
  uint64_t tallyRows_ = 0;
  bool wrongSeen_ = false;
  bool dirty_ = false;  // buffers hold verification data, which repeated in-place reductions could overflow
};

void RankGroup::init() {
  forAll("ncclCommInitRank",
         [&](RankState& rs, size_t) { return ncclCommInitRank(&rs.comm, job_.nranks, job_.world.id, rs.rank); });
  if (job_.device == nullptr) return;
  for (RankState& rs : ranks_) check(job_.device->streamCreate(&rs.stream), "atollStreamCreate", rs);
}

void RankGroup::upload(RankState& rs, Buffer& b, size_t bytes) {
  if (job_.device == nullptr || bytes == 0) return;
  check(job_.device->memcpy(b.at(0, 1), b.mirror.data(), bytes, rs.stream), "atollMemcpy (to the device)", rs);
}

void RankGroup::download(RankState& rs, Buffer& b, size_t bytes) {
  if (job_.device == nullptr || bytes == 0) return;
  check(job_.device->memcpy(b.mirror.data(), b.at(0, 1), bytes, rs.stream), "atollMemcpy (from the device)", rs);
}

// As nccl-tests ends a timed loop: the calls returned once queued, the time is until they ran.
void RankGroup::synchronize() {
  if (job_.device == nullptr) return;
  for (RankState& rs : ranks_) check(job_.device->streamSynchronize(rs.stream), "atollStreamSynchronize", rs);
}

void RankGroup::allocate() {
  size_t sendBytes = 0, recvBytes = 0;
  for (ncclDataType_t type : job_.options.types) {
    const size_t es = typeInfo(type).size;
    for (const RankState& rs : ranks_) {
      Layout l = layoutFor(job_.coll.coll, job_.options.maxBytes, es, job_.nranks, rs.rank);
      sendBytes = std::max(sendBytes, l.sendCount * es);
      recvBytes = std::max(recvBytes, l.bufferCount() * es);
    }
  }
  const bool shared = job_.options.localRegister, device = job_.device != nullptr;
  for (RankState& rs : ranks_) {
    if (!rs.send.reserve(sendBytes, shared, device) || !rs.recv.reserve(recvBytes, shared, device))
      check(ncclSystemError, "ncclMemAlloc", rs);
    upload(rs, rs.send, rs.send.bytes);
    upload(rs, rs.recv, rs.recv.bytes);
    if (!shared) continue;
    check(ncclCommRegister(rs.comm, rs.send.at(0, 1), rs.send.bytes, &rs.send.handle), "ncclCommRegister", rs);
    check(ncclCommRegister(rs.comm, rs.recv.at(0, 1), rs.recv.bytes, &rs.recv.handle), "ncclCommRegister", rs);
  }
}

void RankGroup::shareRankLines() {
  char host[64] = {};
  gethostname(host, sizeof host - 1);
  const int thread = (ranks_[0].rank / job_.options.ranksPerThread) % job_.options.threads;
  const size_t lineBytes = kRankLineBytes;
  std::vector<std::vector<char>> mine(ranks_.size(), std::vector<char>(lineBytes, '\0'));
  std::vector<std::vector<char>> all(ranks_.size(), std::vector<char>(lineBytes * static_cast<size_t>(job_.nranks)));
  for (size_t i = 0; i < ranks_.size(); ++i) {
    int device = -1;
    if (ncclCommCuDevice(ranks_[i].comm, &device) != ncclSuccess) device = -1;
    std::snprintf(mine[i].data(), lineBytes, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x00] host",
                  ranks_[i].rank, thread, static_cast<int>(getpid()), host, device);
  }
  forAll("ncclAllGather", [&](RankState& rs, size_t i) {
    return ncclAllGather(mine[i].data(), all[i].data(), lineBytes, ncclChar, rs.comm, nullptr);
  });
  if (!isReporter()) return;
  std::vector<std::string> lines;
  for (int r = 0; r < job_.nranks; ++r) lines.emplace_back(&all[0][static_cast<size_t>(r) * lineBytes]);
  job_.report->printRanks(lines);
}

void RankGroup::joinTally() {
  if (job_.tally == nullptr) return;
  std::vector<TallyRecord> received(ranks_.size());
  if (job_.tally->crossProcess()) {
    // The library's only part in the tally: telling the clients where the server is. Wrong bytes
    // fail the record's checks or the connection, so they cannot turn into a clean count.
    forAll("ncclBroadcast", [&](RankState& rs, size_t i) {
      const void* send = rs.rank == 0 ? static_cast<const void*>(&job_.tally->record()) : &received[i];
      return ncclBroadcast(send, &received[i], sizeof(TallyRecord), ncclUint8, 0, rs.comm, nullptr);
    });
  }
  tally_ = job_.tally->join(received.data());
}

void RankGroup::combine(double* values, int n, ncclRedOp_t op) {
  forAll("ncclAllReduce", [&](RankState& rs, size_t) {
    std::copy(values, values + n, rs.scratch);
    return ncclAllReduce(rs.scratch, rs.scratch, static_cast<size_t>(n), ncclDouble, op, rs.comm, nullptr);
  });
  std::copy(ranks_[0].scratch, ranks_[0].scratch + n, values);
}

void RankGroup::barrier() {
  double dummy = 0;
  combine(&dummy, 1, ncclSum);
}

void RankGroup::issueAll(Place place, size_t bytes, ncclDataType_t type, ncclRedOp_t op, int root, int agg) {
  const size_t es = typeInfo(type).size;
  const Coll coll = job_.coll.coll;
  forAll(
      job_.coll.name,
      [&](RankState& rs, size_t) {
        Layout l = layoutFor(coll, bytes, es, job_.nranks, rs.rank);
        const bool inPlace = place == Place::InPlace;
        const void* send = inPlace ? rs.recv.at(l.inPlaceSend, es) : rs.send.at(0, es);
        void* recv = rs.recv.at(inPlace ? l.inPlaceRecv : 0, es);
        return issue(coll, send, recv, l, type, op, root, rs.rank, job_.nranks, rs.comm, rs.stream,
                     job_.device != nullptr);
      },
      agg);
}

double RankGroup::timeIt(Place place, size_t bytes, ncclDataType_t type, ncclRedOp_t op, int root, int iters) {
  const Options& o = job_.options;
  barrier();
  const double start = now(o.cpuTime);
  for (int i = 0; i < iters; ++i) issueAll(place, bytes, type, op, root, o.aggIters);
  synchronize();
  const double elapsed = now(o.cpuTime) - start;
  return elapsed * 1e6 / (static_cast<double>(iters) * o.aggIters);
}

int64_t RankGroup::verify(Place place, size_t bytes, ncclDataType_t type, ncclRedOp_t op, int root) {
  const Coll coll = job_.coll.coll;
  const size_t es = typeInfo(type).size;
  const Pattern pattern(type, combineFor(job_.coll.reduces, op), job_.nranks);
  const bool inPlace = place == Place::InPlace;
  for (RankState& rs : ranks_) {
    Layout l = layoutFor(coll, bytes, es, job_.nranks, rs.rank);
    // 0xff bytes are NaN for every float type, so an untouched output cannot pass by accident.
    std::memset(rs.recv.hostAt(0, es), 0xff, l.bufferCount() * es);
    pattern.fill(rs.rank, inPlace ? rs.recv.hostAt(l.inPlaceSend, es) : rs.send.hostAt(0, es), l.sendCount);
    upload(rs, rs.recv, l.bufferCount() * es);
    if (!inPlace) upload(rs, rs.send, l.sendCount * es);
  }
  issueAll(place, bytes, type, op, root, 1);
  int64_t wrong = 0;
  for (RankState& rs : ranks_) {
    Layout l = layoutFor(coll, bytes, es, job_.nranks, rs.rank);
    download(rs, rs.recv, l.bufferCount() * es);
    std::byte* out = rs.recv.hostAt(inPlace ? l.inPlaceRecv : 0, es);
    const size_t n = outputCount(coll, l, rs.rank, root);
    if (rs.rank == job_.corruptRank && n > 0) {
      // Test hook: a result no library could have produced (NaN for floats, inverted bits for integers).
      for (size_t b = 0; b < es; ++b) out[b] = typeInfo(type).isFloat ? std::byte{0xff} : ~out[b];
    }
    for (size_t j = 0; j < n; ++j) {
      double want = expectedOutput(coll, pattern, l, rs.rank, root, job_.nranks, j);
      if (!pattern.matches(decode(type, out, j), want)) ++wrong;
    }
  }
  return wrong;
}

void RankGroup::clean(size_t bytes, size_t es) {
  if (!dirty_) return;
  for (RankState& rs : ranks_) {
    Layout l = layoutFor(job_.coll.coll, bytes, es, job_.nranks, rs.rank);
    std::memset(rs.send.hostAt(0, es), 0, l.sendCount * es);
    std::memset(rs.recv.hostAt(0, es), 0, l.bufferCount() * es);
    upload(rs, rs.send, l.sendCount * es);
    upload(rs, rs.recv, l.bufferCount() * es);
  }
  dirty_ = false;
}

Row RankGroup::measure(size_t bytes, ncclDataType_t type, ncclRedOp_t op, int root) {
  const Options& o = job_.options;
  const size_t es = typeInfo(type).size;
  const Layout l0 = layoutFor(job_.coll.coll, bytes, es, job_.nranks, 0);
  double times[2] = {};
  int64_t wrongs[2] = {-1, -1};
  for (Place place : {Place::OutOfPlace, Place::InPlace}) {
    clean(bytes, es);
    const int p = place == Place::InPlace ? 1 : 0;
    // One untimed call per size and placement: a library's first call at a new shape pays one-off
    // setup (Atoll builds and caches its plan), which a training loop never sees again.
    if (o.warmupIters > 0) issueAll(place, bytes, type, op, root, 1);
    times[p] = timeIt(place, bytes, type, op, root, o.iters);
    if (o.check) {
      wrongs[p] = verify(place, bytes, type, op, root);
      dirty_ = true;
    }
  }
  static constexpr ncclRedOp_t kTimeOps[] = {ncclMin, ncclSum, ncclMax, ncclSum};
  combine(times, 2, kTimeOps[static_cast<int>(o.average)]);
  if (o.average == TimeReduce::Avg) {
    for (double& t : times) t /= job_.nranks;
  }
  // Not combine(): summed by the library under test, a broken all-reduce could report its own
  // wrong results as 0. The tally adds the counts up outside the library (the times may use it).
  if (o.check) tally_->sum(tallyRows_++, wrongs);

  Row row;
  row.bytes = l0.bufferCount() * es;
  row.count = l0.bufferCount();
  row.type = type;
  row.op = job_.coll.reduces ? opName(op) : "none";
  row.root = job_.coll.rooted ? root : -1;
  const double algFactor = algBwFactor(job_.coll.coll, job_.nranks);
  const double factor = busBwFactor(job_.coll.coll, job_.nranks);
  Measurement* sides[2] = {&row.outOfPlace, &row.inPlace};
  for (int p = 0; p < 2; ++p) {
    Measurement& m = *sides[p];
    m.timeUs = times[p];
    m.algBw = times[p] > 0 ? static_cast<double>(row.bytes) * algFactor / (times[p] * 1e3) : 0.0;
    m.busBw = m.algBw * factor;
    m.wrong = wrongs[p];
    if (m.wrong > 0) wrongSeen_ = true;
  }
  return row;
}

void RankGroup::showProgress(const char* text) const {
  if (!isReporter()) return;
  if (job_.options.verbose) {
    if (*text) std::fprintf(stderr, "%s\n", text);
  } else if (isatty(STDERR_FILENO))
    std::fprintf(stderr, "\r%-60s\r", text);
}

void RankGroup::sweep(ncclDataType_t type, ncclRedOp_t op, int root) {
  const Options& o = job_.options;
  const std::vector<size_t> sizes = messageSizes(o);
  if (sizes.empty()) return;
  clean(o.maxBytes, typeInfo(type).size);
  // Warm up at both ends of the range, as nccl-tests does, so neither end pays first-use costs.
  for (size_t bytes : {sizes.back(), sizes.front()}) {
    for (int i = 0; i < o.warmupIters; ++i) issueAll(Place::OutOfPlace, bytes, type, op, root, o.aggIters);
  }
  for (size_t bytes : sizes) {
    char text[128];
    std::snprintf(text, sizeof text, "# %s %s %s: %zu bytes", job_.coll.tool, typeInfo(type).name,
                  job_.coll.reduces ? opName(op) : "", bytes);
    showProgress(text);
    Row row = measure(bytes, type, op, root);
    if (isReporter()) job_.report->addRow(row);
  }
  showProgress("");
}

void RankGroup::run() {
  const Options& o = job_.options;
  init();
  if (isReporter()) retireIdFile(job_.world);  // every rank has joined, so no one needs the file any more
  allocate();
  shareRankLines();
  joinTally();
  const std::vector<ncclRedOp_t> noOp{ncclSum};
  const std::vector<ncclRedOp_t>& ops = job_.coll.reduces ? o.ops : noOp;
  const int root = job_.coll.rooted ? o.root : -1;
  for (int cycle = 0; o.cycles == 0 || cycle < o.cycles; ++cycle) {
    for (ncclDataType_t type : o.types) {
      for (ncclRedOp_t op : ops) sweep(type, op, root);
    }
  }
  for (RankState& rs : ranks_)
    for (Buffer* b : {&rs.send, &rs.recv})
      if (b->handle != nullptr) check(ncclCommDeregister(rs.comm, b->handle), "ncclCommDeregister", rs);
  forAll("ncclCommFinalize", [](RankState& rs, size_t) { return ncclCommFinalize(rs.comm); });
  for (RankState& rs : ranks_) {
    check(ncclCommDestroy(rs.comm), "ncclCommDestroy", rs);
    rs.comm = nullptr;
    if (rs.stream != nullptr) check(job_.device->streamDestroy(rs.stream), "atollStreamDestroy", rs);
    rs.stream = nullptr;
  }
  if (tally_) tally_->awaitRelease();
  tally_.reset();
}

// ATOLL_PERF_CORRUPT_RANK: -1 when unset, -2 when not a rank of this job.
int corruptRankFromEnv(int nranks) {
  const char* text = std::getenv(kEnvCorruptRank);
  if (text == nullptr || *text == '\0') return -1;
  char* end = nullptr;
  const long r = std::strtol(text, &end, 10);
  return *end == '\0' && r >= 0 && r < nranks ? static_cast<int>(r) : -2;
}

}  // namespace

int toolMain(int argc, char** argv, Coll coll) {
  const CollInfo& info = collInfo(coll);
  Options options;
  std::string error;
  switch (parseOptions(argc, argv, &options, &error)) {
    case ParseOutcome::Help:
      printUsage(info.tool, info.reduces, info.rooted);
      return 0;
    case ParseOutcome::Error:
      std::fprintf(stderr, "%s: %s\n", info.tool, error.c_str());
      printUsage(info.tool, info.reduces, info.rooted);
      return kExitUsage;
    case ParseOutcome::Run:
      break;
  }
  World world;
  if (!discoverWorld(&world, &error)) {
    std::fprintf(stderr, "%s: %s\n", info.tool, error.c_str());
    return kExitUsage;
  }
  const int perProc = options.threads * options.ranksPerThread;
  const int nranks = world.nprocs * perProc;
  if (info.rooted && options.root >= nranks) {
    std::fprintf(stderr, "%s: root %d is out of range for %d ranks\n", info.tool, options.root, nranks);
    return kExitUsage;
  }
  const std::string unsupported = unsupportedReason(coll, nranks, options.ranksPerThread, options.aggIters);
  if (!unsupported.empty()) {
    std::fprintf(stderr, "%s: %s\n", info.tool, unsupported.c_str());
    retireIdFile(world);
    return kExitUsage;
  }
  DeviceCalls deviceCalls;
  if (options.deviceBuffers) {
    // Before any communicator exists: a backend without streams (host) is a usage error, not a
    // library failure halfway through the run.
    cudaStream_t probe = nullptr;
    error.clear();
    if (!findDeviceCalls(&deviceCalls, &error) || deviceCalls.streamCreate(&probe) != ncclSuccess ||
        deviceCalls.streamDestroy(probe) != ncclSuccess) {
      std::fprintf(stderr, "%s: -D 1: %s\n", info.tool, error.empty() ? ncclGetLastError(nullptr) : error.c_str());
      retireIdFile(world);
      return kExitUsage;
    }
  }
  const int corruptRank = corruptRankFromEnv(nranks);
  if (corruptRank == -2) {
    std::fprintf(stderr, "%s: %s=%s is not a rank of this job (0..%d)\n", info.tool, kEnvCorruptRank,
                 std::getenv(kEnvCorruptRank), nranks - 1);
    retireIdFile(world);
    return kExitUsage;
  }
  std::unique_ptr<Report> report;
  if (world.proc == 0) {
    report = std::make_unique<Report>(options, info, world, nranks);
    report->printPreamble();
  }
  // Before any RankGroup starts: process 0's server must be listening when rank 0 broadcasts its address.
  std::unique_ptr<Tally> tally;
  if (options.check) {
    tally = std::make_unique<Tally>(world.nprocs * options.threads, options.threads, world.nprocs > 1, world.proc == 0,
                                    [&info, &world](const std::string& message) {
                                      die(kExitLibrary, "%s: process %d: wrong-count tally: %s", info.tool, world.proc,
                                          message.c_str());
                                    });
  }
  const Job job{options, info, world, nranks, report.get(), tally.get(), corruptRank,
                options.deviceBuffers ? &deviceCalls : nullptr};
  std::vector<std::unique_ptr<RankGroup>> groups;
  for (int t = 0; t < options.threads; ++t) {
    groups.push_back(
        std::make_unique<RankGroup>(job, world.proc * perProc + t * options.ranksPerThread, options.ranksPerThread));
  }
  std::vector<std::thread> threads;
  for (size_t t = 1; t < groups.size(); ++t) threads.emplace_back([&, t] { groups[t]->run(); });
  groups[0]->run();
  for (std::thread& th : threads) th.join();
  retireIdFile(world);

  bool wrong = false;
  for (const auto& g : groups) wrong = wrong || g->wrongSeen();
  if (report && report->finish() != 0) wrong = true;
  if (tally) tally->release();
  return wrong ? kExitWrong : 0;
}

}  // namespace atl::perf
