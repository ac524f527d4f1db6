#include "tests/integration/coll_cases.h"

#include "core/call_report.h"
#include "device/emu_device.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <thread>

namespace collcheck {
namespace {

constexpr size_t kGuard = 64;
constexpr unsigned char kGuardByte = 0xA5;
constexpr unsigned char kJunkByte = 0xEE;

bool gNcclMem = false;
bool gDevice = false;

struct MemFree {
  void operator()(unsigned char* p) const { ncclMemFree(p); }
};

// --device: the library's device backend (ATOLL_DEVICE), through which device buffers are filled
// and read back (tests link the library's internals).
const atl::device::Device& device() {
  static const atl::device::Device* d = [] {
    atl::Result<const atl::device::Device*> r = atl::device::select();
    if (!r.ok()) {
      std::fprintf(stderr, "coll_check: no device backend: %s\n", atl::lastErrorMessage().c_str());
      std::abort();
    }
    return *r;
  }();
  return *d;
}

// Host memory with guard zones on both sides, so out-of-bounds writes by the library are caught;
// from ncclMemAlloc with --nccl-mem (shm links then move it in a single copy between processes).
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes) : bytes_(bytes), size_(bytes + 2 * kGuard) {
    if (gDevice) {
      // The host copy is what the checks read; the calls get the device copy.
      void* p = nullptr;
      if (ncclMemAlloc(&p, size_) != ncclSuccess) {
        std::fprintf(stderr, "coll_check: ncclMemAlloc(%zu) of device memory failed: %s\n", size_, ncclGetLastError(nullptr));
        std::abort();
      }
      device_.reset(static_cast<unsigned char*>(p));
    }
    if (gNcclMem && !gDevice) {
      void* p = nullptr;
      if (ncclMemAlloc(&p, size_) != ncclSuccess) {
        std::fprintf(stderr, "coll_check: ncclMemAlloc(%zu) failed: %s\n", size_, ncclGetLastError(nullptr));
        std::abort();
      }
      shared_.reset(static_cast<unsigned char*>(p));
    } else {
      mem_.reset(new unsigned char[size_]);
    }
    unsigned char* m = base();
    std::fill(m, m + size_, kJunkByte);
    std::fill(m, m + kGuard, kGuardByte);
    std::fill(m + size_ - kGuard, m + size_, kGuardByte);
  }
  /// The device address of host-copy address `p`, or nullptr when `p` is not in this buffer.
  unsigned char* onDevice(const unsigned char* p) const {
    if (!device_ || p < base() || p >= base() + size_) return nullptr;
    return device_.get() + (p - base());
  }
  /// Fills the device copy from the host copy, on `stream` after the work already there. On the
  /// emulated device the copy is queued behind a delay, so a collective that does not wait for
  /// its stream reads stale bytes and fails its check.
  void upload(ncclComm_t comm, cudaStream_t stream) {
    if (!device_) return;
    const atl::device::Device& d = device();
    if (d.kind() == atl::device::Kind::Emu) {
      void* view = atl::device::emuHostView(device_.get(), size_);
      const unsigned char* from = base();
      const size_t n = size_;
      expectOk(atl::device::emuEnqueue(stream, [view, from, n] {
        std::this_thread::sleep_for(std::chrono::microseconds(300));
        std::memcpy(view, from, n);
      }));
      return;
    }
    int dev = 0;
    ncclCommCuDevice(comm, &dev);
    expectOk(d.copy(dev, device_.get(), base(), size_, stream));
  }
  /// Reads the device copy back, on `stream` after the collective.
  void download(ncclComm_t comm, cudaStream_t stream) {
    if (!device_) return;
    int dev = 0;
    ncclCommCuDevice(comm, &dev);
    expectOk(device().copy(dev, base(), device_.get(), size_, stream));
  }
  unsigned char* data() { return base() + kGuard; }
  const unsigned char* data() const { return base() + kGuard; }
  size_t bytes() const { return bytes_; }
  bool guardsIntact() const {
    if (size_ == 0) return true;
    const unsigned char* m = base();
    for (size_t i = 0; i < kGuard; ++i)
      if (m[i] != kGuardByte || m[size_ - 1 - i] != kGuardByte) return false;
    return true;
  }

 private:
  unsigned char* base() const { return shared_ ? shared_.get() : mem_.get(); }
  static void expectOk(atl::Status st) {
    if (st.ok()) return;
    std::fprintf(stderr, "coll_check: device copy failed: %s\n", atl::lastErrorMessage().c_str());
    std::abort();
  }
  size_t bytes_ = 0, size_ = 0;
  std::unique_ptr<unsigned char[]> mem_;
  std::unique_ptr<unsigned char, MemFree> shared_;
  std::unique_ptr<unsigned char, MemFree> device_;  // --device: what the library is given
};

std::mutex gCaseMu;
std::string gCurrentCase;

// One rank's buffers and state for one case.
struct RankRun {
  int rank = 0;
  ncclComm_t comm = nullptr;
  Buffer send, recv;          // recv unused when in place
  unsigned char* sendPtr = nullptr;
  unsigned char* recvPtr = nullptr;
  std::vector<unsigned char> sendCopy;  // pristine input, to prove out-of-place input is untouched
  ncclRedOp_t op = ncclSum;
  bool opCreated = false;
  std::unique_ptr<unsigned char[]> scalar;  // must outlive the call for ncclScalarDevice
  std::unique_ptr<unsigned char, MemFree> deviceScalar;  // --device: the ncclScalarDevice scalar
  cudaStream_t stream = nullptr;
  std::vector<std::string> errors;
  /// What the calls are given: the device copy's address with --device, else the buffer itself.
  const unsigned char* in() const { return onDevice(sendPtr); }
  unsigned char* out() const { return onDevice(recvPtr); }

 private:
  unsigned char* onDevice(unsigned char* p) const {
    if (!gDevice || p == nullptr) return p;
    if (unsigned char* d = send.onDevice(p)) return d;
    return recv.onDevice(p);
  }
};

ncclRedOp_t baseOp(Op op) {
  switch (op) {
    case kSum: return ncclSum;
    case kProd: return ncclProd;
    case kMax: return ncclMax;
    case kMin: return ncclMin;
    case kAvg: return ncclAvg;
    default: return ncclSum;
  }
}

std::string callError(const char* what, ncclResult_t rc, ncclComm_t comm) {
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s returned %d (%s), last error: %s", what, static_cast<int>(rc),
                ncclGetErrorString(rc), ncclGetLastError(comm));
  return buf;
}

// Element counts of the send and recv buffers for collective `c` (NCCL's argument semantics).
void bufferCounts(const Case& c, int n, int rank, size_t* sendCount, size_t* recvCount) {
  const size_t k = c.count, nk = c.count * static_cast<size_t>(n);
  switch (c.coll) {
    case Coll::kAllGather: *sendCount = k; *recvCount = nk; break;
    case Coll::kReduceScatter: *sendCount = nk; *recvCount = k; break;
    case Coll::kAlltoAll: case Coll::kSendRecvAll: *sendCount = nk; *recvCount = nk; break;
    case Coll::kGather: *sendCount = k; *recvCount = rank == c.root ? nk : 0; break;
    case Coll::kScatter: *sendCount = rank == c.root ? nk : 0; *recvCount = k; break;
    default: *sendCount = k; *recvCount = k; break;
  }
}

void fillInput(const Case& c, int n, int rank, unsigned char* p, size_t count) {
  const TypeInfo& t = typeInfo(c.dt);
  if (isReduction(c.coll)) {
    ReduceInputs in(t, c.op, n, c.seed);
    for (size_t i = 0; i < count; ++i) encodeExact(c.dt, in.value(rank, i), p + i * t.size);
  } else {
    for (size_t i = 0; i < count; ++i) movementBytes(c.seed, rank, i, t.size, p + i * t.size);
  }
}

void prepare(const Case& c, int n, RankRun& rr) {
  const TypeInfo& t = typeInfo(c.dt);
  size_t sc = 0, rc = 0;
  bufferCounts(c, n, rr.rank, &sc, &rc);
  const size_t es = t.size;
  const bool inplace = c.inplace;
  switch (c.coll) {
    case Coll::kBcast:
      rr.recv = Buffer(rc * es);
      rr.sendPtr = rr.recvPtr = rr.recv.data();
      if (rr.rank == c.root) fillInput(c, n, rr.rank, rr.recvPtr, c.count);
      break;
    case Coll::kAllGather:
      rr.recv = Buffer(rc * es);
      rr.recvPtr = rr.recv.data();
      if (inplace) {
        rr.sendPtr = rr.recvPtr + static_cast<size_t>(rr.rank) * c.count * es;
      } else {
        rr.send = Buffer(sc * es);
        rr.sendPtr = rr.send.data();
      }
      fillInput(c, n, rr.rank, rr.sendPtr, sc);
      break;
    case Coll::kReduceScatter:
      rr.send = Buffer(sc * es);
      rr.sendPtr = rr.send.data();
      fillInput(c, n, rr.rank, rr.sendPtr, sc);
      if (inplace) {
        rr.recvPtr = rr.sendPtr + static_cast<size_t>(rr.rank) * c.count * es;
      } else {
        rr.recv = Buffer(rc * es);
        rr.recvPtr = rr.recv.data();
      }
      break;
    case Coll::kGather:
      if (inplace && rr.rank == c.root) {
        rr.recv = Buffer(rc * es);
        rr.recvPtr = rr.recv.data();
        rr.sendPtr = rr.recvPtr + static_cast<size_t>(c.root) * c.count * es;
      } else {
        rr.send = Buffer(sc * es);
        rr.recv = Buffer(rc * es);
        rr.sendPtr = rr.send.data();
        rr.recvPtr = rr.recv.data();
      }
      fillInput(c, n, rr.rank, rr.sendPtr, sc);
      break;
    case Coll::kScatter:
      rr.send = Buffer(sc * es);
      rr.sendPtr = rr.send.data();
      fillInput(c, n, rr.rank, rr.sendPtr, sc);
      if (inplace && rr.rank == c.root) {
        rr.recvPtr = rr.sendPtr + static_cast<size_t>(c.root) * c.count * es;
      } else {
        rr.recv = Buffer(rc * es);
        rr.recvPtr = rr.recv.data();
      }
      break;
    default:  // same-sized send and recv; in place means one buffer
      rr.send = Buffer(sc * es);
      rr.sendPtr = rr.send.data();
      fillInput(c, n, rr.rank, rr.sendPtr, sc);
      if (inplace) {
        rr.recvPtr = rr.sendPtr;
      } else {
        rr.recv = Buffer(rc * es);
        rr.recvPtr = rr.recv.data();
      }
      break;
  }
  // The input is untouched only where it does not alias the output.
  const bool aliased = rr.sendPtr == rr.recvPtr || (inplace && c.coll != Coll::kAlltoAll);
  if (!aliased && rr.sendPtr && c.coll != Coll::kBcast) rr.sendCopy.assign(rr.sendPtr, rr.sendPtr + sc * es);

  if (isReduction(c.coll)) {
    if (c.op == kPreMul) {
      rr.scalar.reset(new unsigned char[8]);
      encodeExact(c.dt, preMulScalar(t, rr.rank), rr.scalar.get());
      void* scalar = rr.scalar.get();
      if (gDevice && c.residence == ncclScalarDevice) {
        void* d = nullptr;
        int dev = 0;
        ncclCommCuDevice(rr.comm, &dev);
        if (ncclMemAlloc(&d, 8) != ncclSuccess || !device().copy(dev, d, scalar, 8, nullptr).ok()) {
          std::fprintf(stderr, "coll_check: cannot place the scalar in device memory: %s\n", ncclGetLastError(nullptr));
          std::abort();
        }
        rr.deviceScalar.reset(static_cast<unsigned char*>(d));
        scalar = d;
      }
      ncclResult_t r = ncclRedOpCreatePreMulSum(&rr.op, scalar, c.dt, c.residence, rr.comm);
      if (r != ncclSuccess) {
        rr.errors.push_back(callError("ncclRedOpCreatePreMulSum", r, rr.comm));
      } else {
        rr.opCreated = true;
        // Host-immediate scalars are read at creation: clobbering the memory must not matter.
        if (c.residence == ncclScalarHostImmediate) std::memset(rr.scalar.get(), 0x7d, 8);
      }
    } else {
      rr.op = baseOp(c.op);
    }
  }
}

void issue(const Case& c, int n, RankRun& rr) {
  if (!rr.errors.empty()) return;
  const size_t es = typeInfo(c.dt).size;
  const size_t k = c.count;
  ncclResult_t r = ncclSuccess;
  const char* name = kCollNames[static_cast<int>(c.coll)];
  switch (c.coll) {
    case Coll::kAllReduce: r = ncclAllReduce(rr.in(), rr.out(), k, c.dt, rr.op, rr.comm, rr.stream); break;
    case Coll::kBroadcast: r = ncclBroadcast(rr.in(), rr.out(), k, c.dt, c.root, rr.comm, rr.stream); break;
    case Coll::kBcast: r = ncclBcast(rr.out(), k, c.dt, c.root, rr.comm, rr.stream); break;
    case Coll::kReduce: r = ncclReduce(rr.in(), rr.out(), k, c.dt, rr.op, c.root, rr.comm, rr.stream); break;
    case Coll::kAllGather: r = ncclAllGather(rr.in(), rr.out(), k, c.dt, rr.comm, rr.stream); break;
    case Coll::kReduceScatter:
      r = ncclReduceScatter(rr.in(), rr.out(), k, c.dt, rr.op, rr.comm, rr.stream);
      break;
    case Coll::kAlltoAll: r = ncclAlltoAll(rr.in(), rr.out(), k, c.dt, rr.comm, rr.stream); break;
    case Coll::kGather: r = ncclGather(rr.in(), rr.out(), k, c.dt, c.root, rr.comm, rr.stream); break;
    case Coll::kScatter: r = ncclScatter(rr.in(), rr.out(), k, c.dt, c.root, rr.comm, rr.stream); break;
    case Coll::kSendRecvRing: {
      const int next = (rr.rank + 1) % n, prev = (rr.rank + n - 1) % n;
      r = ncclSend(rr.in(), k, c.dt, next, rr.comm, rr.stream);
      if (r == ncclSuccess) r = ncclRecv(rr.out(), k, c.dt, prev, rr.comm, rr.stream);
      break;
    }
    case Coll::kSendRecvAll:
      for (int p = 0; p < n && r == ncclSuccess; ++p) {
        const size_t off = static_cast<size_t>(p) * k * es;
        r = ncclSend(rr.in() + off, k, c.dt, p, rr.comm, rr.stream);
        if (r == ncclSuccess) r = ncclRecv(rr.out() + off, k, c.dt, p, rr.comm, rr.stream);
      }
      break;
    default: break;
  }
  if (r != ncclSuccess) rr.errors.push_back(callError(name, r, rr.comm));
}

std::string mismatch(const Case& c, int rank, size_t index, const std::string& got, const std::string& want) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "rank=%d index=%zu got=%s expected=%s", rank, index, got.c_str(), want.c_str());
  return c.describe() + " " + buf;
}

// Appends the first mismatch of this rank's output (the rest are counted, not listed).
void check(const Case& c, int n, RankRun& rr) {
  if (rr.opCreated) {
    ncclResult_t r = ncclRedOpDestroy(rr.op, rr.comm);
    if (r != ncclSuccess) rr.errors.push_back(callError("ncclRedOpDestroy", r, rr.comm));
  }
  if (!rr.errors.empty()) return;
  const TypeInfo& t = typeInfo(c.dt);
  const size_t es = t.size, k = c.count;
  size_t bad = 0;
  std::string first;
  auto note = [&](size_t index, const std::string& got, const std::string& want) {
    if (bad++ == 0) first = mismatch(c, rr.rank, index, got, want);
  };
  if (isReduction(c.coll)) {
    const bool hasOutput = c.coll != Coll::kReduce || rr.rank == c.root;
    if (hasOutput) {
      ReduceInputs in(t, c.op, n, c.seed);
      const size_t base = c.coll == Coll::kReduceScatter ? static_cast<size_t>(rr.rank) * k : 0;
      for (size_t i = 0; i < k; ++i) {
        const double want = in.expected(base + i);
        const double got = decode(c.dt, rr.recvPtr + i * es);
        if (!in.matches(got, want)) {
          char w[64];
          std::snprintf(w, sizeof w, "%.17g", want);
          note(i, formatElem(c.dt, rr.recvPtr + i * es), w);
        }
      }
    }
  } else {
    // (source rank, source index) of every output element.
    size_t outCount = k;
    auto source = [&](size_t j, int* src, size_t* srcIndex) {
      const int p = static_cast<int>(j / std::max<size_t>(k, 1));
      const size_t i = j % std::max<size_t>(k, 1);
      switch (c.coll) {
        case Coll::kAllGather: case Coll::kGather: *src = p; *srcIndex = i; break;
        case Coll::kAlltoAll: case Coll::kSendRecvAll:
          *src = p; *srcIndex = static_cast<size_t>(rr.rank) * k + i; break;
        case Coll::kScatter: *src = c.root; *srcIndex = static_cast<size_t>(rr.rank) * k + j; break;
        case Coll::kSendRecvRing: *src = (rr.rank + n - 1) % n; *srcIndex = j; break;
        default: *src = c.root; *srcIndex = j; break;  // broadcast, bcast
      }
    };
    switch (c.coll) {
      case Coll::kAllGather: case Coll::kAlltoAll: case Coll::kSendRecvAll: outCount = k * n; break;
      case Coll::kGather: outCount = rr.rank == c.root ? k * n : 0; break;
      default: break;
    }
    unsigned char want[8];
    for (size_t j = 0; j < outCount; ++j) {
      int src = 0;
      size_t si = 0;
      source(j, &src, &si);
      movementBytes(c.seed, src, si, es, want);
      if (std::memcmp(want, rr.recvPtr + j * es, es) != 0)
        note(j, formatElem(c.dt, rr.recvPtr + j * es), formatElem(c.dt, want));
    }
  }
  if (bad) {
    rr.errors.push_back(first + (bad > 1 ? " (+" + std::to_string(bad - 1) + " more)" : ""));
  }
  if (!rr.sendCopy.empty() && std::memcmp(rr.sendCopy.data(), rr.sendPtr, rr.sendCopy.size()) != 0)
    rr.errors.push_back(c.describe() + " rank=" + std::to_string(rr.rank) + ": out-of-place input was modified");
  if (!rr.send.guardsIntact() || !rr.recv.guardsIntact())
    rr.errors.push_back(c.describe() + " rank=" + std::to_string(rr.rank) + ": write outside the buffer");
}

}  // namespace

void useNcclMem(bool on) { gNcclMem = on; }
void useDevice(bool on) { gDevice = on; }

std::string Case::describe() const {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s dtype=%s op=%s count=%zu %s root=%d%s", kCollNames[static_cast<int>(coll)],
                typeInfo(dt).name, isReduction(coll) ? kOpNames[op] : "-", count,
                inplace ? "in-place" : "out-of-place", root,
                op == kPreMul && isReduction(coll)
                    ? (residence == ncclScalarHostImmediate ? " scalar=host" : " scalar=device")
                    : "");
  return buf;
}

void Stats::fail(const std::string& detail) {
  failed_.fetch_add(1);
  std::lock_guard<std::mutex> lk(mu_);
  if (printed_ < maxPrinted_) {
    std::printf("FAIL %s\n", detail.c_str());
    std::fflush(stdout);
  } else if (printed_ == maxPrinted_) {
    std::printf("FAIL ... (further failures not printed)\n");
  }
  ++printed_;
}

void setCurrentCase(const std::string& what) {
  std::lock_guard<std::mutex> lk(gCaseMu);
  gCurrentCase = what;
}
std::string currentCase() {
  std::lock_guard<std::mutex> lk(gCaseMu);
  return gCurrentCase;
}

std::vector<Case> buildCases(const Options& opt, int n) {
  const size_t N = static_cast<size_t>(n);
  std::vector<size_t> counts = opt.counts;
  if (counts.empty()) {
    if (opt.level == Level::kQuick) {
      counts = {0, 1, 3, 31, 1031, 13 * N + 1};
    } else if (opt.level == Level::kLean) {
      counts = {0, 1, 3, 31, 1031, 13 * N + 1, 65537};
    } else {
      counts = {0, 1, 2, 3, 7, 31, 257, 1031, 65537, 13 * N + 1, 1000 * N + N - 1};
    }
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  }
  std::vector<int> roots = {0, n - 1, n / 2};
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  const bool full = opt.level == Level::kFull;

  std::vector<Case> cases;
  uint64_t seed = 1;
  size_t rot = 0;  // rotates roots through the sweep when not --full
  for (int ci = 0; ci < static_cast<int>(Coll::kCount); ++ci) {
    if (!opt.colls[static_cast<size_t>(ci)]) continue;
    const Coll coll = static_cast<Coll>(ci);
    for (int ti = 0; ti < ncclNumTypes; ++ti) {
      if (!opt.types[static_cast<size_t>(ti)]) continue;
      const ncclDataType_t dt = static_cast<ncclDataType_t>(ti);
      for (int oi = 0; oi < (isReduction(coll) ? kNumOps : 1); ++oi) {
        if (isReduction(coll) && !opt.ops[static_cast<size_t>(oi)]) continue;
        const Op op = static_cast<Op>(oi);
        for (size_t cnt = 0; cnt < counts.size(); ++cnt) {
          // Large counts exercise chunking and pipelining, not the operator: unless --full, each
          // (collective, datatype) runs them with one operator, rotating over the datatypes.
          const bool big = counts[cnt] > 4096;
          // --lean: the large count (chunking, single copy) for a third of the datatypes, a
          // different third for each collective; it is most of the sweep's time under sanitizers.
          if (big && opt.level == Level::kLean && opt.counts.empty() && (ti + ci) % 3 != 0) continue;
          const size_t bigOp = static_cast<size_t>(ti + ci) % kNumOps;
          if (big && !full && opt.counts.empty() && isReduction(coll) && static_cast<size_t>(oi) != bigOp &&
              opt.ops[bigOp])
            continue;
          for (int ip = 0; ip < 2; ++ip) {
            const bool inplace = ip == 1;
            if (inplace && (coll == Coll::kAlltoAll || coll == Coll::kSendRecvRing || coll == Coll::kSendRecvAll ||
                            coll == Coll::kBcast))
              continue;
            std::vector<int> rootList = {0};
            if (isRooted(coll)) rootList = full ? roots : std::vector<int>{roots[rot++ % roots.size()]};
            for (int root : rootList) {
              Case c{coll, dt, op, counts[cnt], inplace, root,
                     (cnt + static_cast<size_t>(root) + static_cast<size_t>(ip)) % 2 ? ncclScalarDevice
                                                                                     : ncclScalarHostImmediate,
                     seed++};
              cases.push_back(c);
            }
          }
        }
      }
    }
  }
  return cases;
}

bool parseExpectAlgo(const std::string& spec, std::vector<std::string>* out) {
  out->assign(static_cast<size_t>(Coll::kCount), "");
  std::string all;
  std::vector<std::pair<int, std::string>> given;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t e = spec.find(',', pos);
    if (e == std::string::npos) e = spec.size();
    const std::string item = spec.substr(pos, e - pos);
    pos = e + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) {
      all = item;
      continue;
    }
    const std::string coll = item.substr(0, eq);
    int found = -1;
    for (int i = 0; i < static_cast<int>(Coll::kCount); ++i)
      if (coll == kCollNames[i]) found = i;
    if (found < 0) return false;
    given.emplace_back(found, item.substr(eq + 1));
  }
  for (Coll c : {Coll::kAllReduce, Coll::kBroadcast, Coll::kReduce, Coll::kAllGather, Coll::kReduceScatter})
    (*out)[static_cast<size_t>(c)] = all;
  for (Coll c : {Coll::kAlltoAll, Coll::kGather, Coll::kScatter}) (*out)[static_cast<size_t>(c)] = "direct";
  for (const auto& [i, a] : given) (*out)[static_cast<size_t>(i)] = a;
  auto& bcast = (*out)[static_cast<size_t>(Coll::kBcast)];
  if (bcast.empty()) bcast = (*out)[static_cast<size_t>(Coll::kBroadcast)];
  return true;
}

namespace {

// The algorithm the library reports for the call just made must be the expected one, so a silent
// fallback (to the ring, say) fails the test instead of passing on correct data.
void checkExecutedAlgo(const World& w, const Case& c, RankRun& rr, uint64_t seqBefore) {
  const std::string& want = w.expectAlgo.empty() ? std::string() : w.expectAlgo[static_cast<size_t>(c.coll)];
  if (want.empty() || c.count == 0) return;
  std::optional<atl::CallReport> got = atl::lastCall(rr.comm);
  if (!got || got->seq != seqBefore + 1) {
    rr.errors.push_back(c.describe() + ": no executed-algorithm report for this call");
    return;
  }
  if (want != atl::algo::algoName(got->algo) || got->count != c.count || got->dtype != c.dt)
    rr.errors.push_back(c.describe() + ": ran " + atl::algo::algoName(got->algo) + " (count " +
                        std::to_string(got->count) + "), expected " + want);
}

// With --expect-device-direct, every call the direct device path takes must report it.
void checkDeviceDirect(const World& w, const Case& c, RankRun& rr, uint64_t seqBefore) {
  const bool direct = c.coll == Coll::kAllReduce || c.coll == Coll::kReduceScatter || c.coll == Coll::kAllGather ||
                      c.coll == Coll::kBroadcast || c.coll == Coll::kBcast || c.coll == Coll::kReduce;
  if (!w.expectDeviceDirect || !direct || c.count == 0 || c.op == kPreMul) return;
  std::optional<atl::CallReport> got = atl::lastCall(rr.comm);
  if (!got || got->seq != seqBefore + 1 || std::string(got->proto) != "DeviceIpc")
    rr.errors.push_back(c.describe() + ": staged instead of the direct device path (reported " +
                        (got ? std::string(atl::algo::algoName(got->algo)) + "/" + got->proto : std::string("nothing")) +
                        ")");
}

}  // namespace

void runCase(const World& w, const Case& c, Stats& stats) {
  std::vector<RankRun> runs(w.ranks.size());
  std::vector<uint64_t> seqBefore(w.ranks.size(), 0);
  for (size_t l = 0; l < runs.size(); ++l)
    if (std::optional<atl::CallReport> last = atl::lastCall(w.comms[l])) seqBefore[l] = last->seq;
  for (size_t l = 0; l < runs.size(); ++l) {
    runs[l].rank = w.ranks[l];
    runs[l].comm = w.comms[l];
    runs[l].stream = w.streams.empty() ? nullptr : w.streams[l];
    prepare(c, w.nranks, runs[l]);
    runs[l].send.upload(runs[l].comm, runs[l].stream);
    runs[l].recv.upload(runs[l].comm, runs[l].stream);
  }
  const bool p2p = c.coll == Coll::kSendRecvRing || c.coll == Coll::kSendRecvAll;
  const bool group = w.grouped || p2p;
  std::string groupErr;
  if (group) {
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) groupErr = callError("ncclGroupStart", r, nullptr);
  }
  for (RankRun& rr : runs) issue(c, w.nranks, rr);
  if (group) {
    ncclResult_t r = ncclGroupEnd();
    if (r != ncclSuccess && groupErr.empty()) groupErr = callError("ncclGroupEnd", r, runs[0].comm);
  }
  for (size_t l = 0; l < runs.size(); ++l) {
    RankRun& rr = runs[l];
    rr.send.download(rr.comm, rr.stream);
    rr.recv.download(rr.comm, rr.stream);
    if (!groupErr.empty()) rr.errors.push_back(groupErr);
    if (rr.errors.empty() && !p2p) checkExecutedAlgo(w, c, rr, seqBefore[l]);
    if (rr.errors.empty()) checkDeviceDirect(w, c, rr, seqBefore[l]);
    check(c, w.nranks, rr);
    if (rr.errors.empty()) {
      stats.pass();
    } else {
      std::string all = c.describe() + " rank=" + std::to_string(rr.rank) + ": " + rr.errors[0];
      if (rr.errors[0].rfind(c.describe(), 0) == 0) all = rr.errors[0];
      for (size_t e = 1; e < rr.errors.size(); ++e) all += "; " + rr.errors[e];
      stats.fail(all);
    }
  }
}

}  // namespace collcheck
