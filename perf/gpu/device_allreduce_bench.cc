// All-reduce on device buffers through the library's device backend (ATOLL_DEVICE=cuda on a GPU,
// emu here), side by side with the same call on host buffers, ranks as threads of one process
// sharing the device. Below ATOLL_DEVICE_IPC_MIN (1 MiB) it measures the staged path
// (core/device_staging.h): the device/host ratio is the share of time the copies to and from the
// device leave to the collective. From there on, all-reduce reads the peers' device buffers in
// place (core/device_intranode.h); ATOLL_DEVICE_IPC_MIN=-1 measures staging at every size.
//
//   device_allreduce_bench [--ranks N] [--min BYTES] [--max BYTES] [--iters N] [--warmup N]
//
// Every size is checked once (float sum of rank-dependent values) before it is timed; a wrong
// value exits 1. Output: one row per size, busbw in GB/s as nccl-tests defines it for all-reduce.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "device/device.h"
#include "device/emu_device.h"
#include "perf/common/byte_size.h"
#include "nccl.h"

namespace {

struct Args {
  int ranks = 2;
  size_t minBytes = 1024;
  size_t maxBytes = 64 << 20;
  int iters = 20;
  int warmup = 3;
};

[[noreturn]] void usage() {
  std::fprintf(stderr, "usage: device_allreduce_bench [--ranks N] [--min BYTES] [--max BYTES] [--iters N] [--warmup N]\n");
  std::exit(2);
}

size_t parseBytes(const char* s) {
  size_t v = 0;
  if (!atl::perf::parseByteSize(s, &v)) usage();
  return v;
}

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (s == "--ranks") a.ranks = std::atoi(v);
    else if (s == "--min") a.minBytes = parseBytes(v);
    else if (s == "--max") a.maxBytes = parseBytes(v);
    else if (s == "--iters") a.iters = std::atoi(v);
    else if (s == "--warmup") a.warmup = std::atoi(v);
    else usage();
  }
  if (a.ranks < 1 || a.iters < 1 || a.warmup < 0 || a.minBytes < 4 || a.maxBytes < a.minBytes) usage();
  return a;
}

[[noreturn]] void fail(const char* what, ncclComm_t comm) {
  std::fprintf(stderr, "device_allreduce_bench: %s failed: %s\n", what, ncclGetLastError(comm));
  std::exit(3);
}

const atl::device::Device& backend() {
  atl::Result<const atl::device::Device*> d = atl::device::select();
  if (!d.ok()) fail("selecting the device backend (ATOLL_DEVICE)", nullptr);
  return **d;
}

struct Rank {
  ncclComm_t comm = nullptr;
  int dev = 0;
  cudaStream_t stream = nullptr;  // the rank's own: calls on it are queued (core/device_proxy.h)
  void* devBuf = nullptr;
  std::vector<float> host;
};

// Runs fn(rank) on every rank's thread and waits.
template <class F>
void onRanks(std::vector<Rank>& ranks, F fn) {
  std::vector<std::thread> t;
  for (size_t r = 0; r < ranks.size(); ++r) t.emplace_back([&, r] { fn(static_cast<int>(r), ranks[r]); });
  for (std::thread& x : t) x.join();
}

double timeCalls(std::vector<Rank>& ranks, size_t count, bool onDevice, int warmup, int iters) {
  std::vector<double> seconds(ranks.size());
  onRanks(ranks, [&](int r, Rank& rk) {
    void* buf = onDevice ? rk.devBuf : static_cast<void*>(rk.host.data());
    for (int i = 0; i < warmup; ++i)
      if (ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, rk.comm, rk.stream) != ncclSuccess) fail("ncclAllReduce", rk.comm);
    if (!backend().synchronize(rk.dev, rk.stream).ok()) fail("stream synchronize", rk.comm);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; ++i)
      if (ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, rk.comm, rk.stream) != ncclSuccess) fail("ncclAllReduce", rk.comm);
    // Device calls are queued: the clock stops when the stream has run them all. (Host-memory
    // calls are complete on return; the wait then costs one empty round trip.)
    if (!backend().synchronize(rk.dev, rk.stream).ok()) fail("stream synchronize", rk.comm);
    seconds[static_cast<size_t>(r)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  });
  double worst = 0;
  for (double s : seconds) worst = std::max(worst, s);
  return worst / iters;
}

}  // namespace

int main(int argc, char** argv) {
  const Args a = parse(argc, argv);
  const atl::device::Device& d = backend();
  if (d.kind() == atl::device::Kind::Host) {
    std::fprintf(stderr, "device_allreduce_bench: the host backend has no device buffers (set ATOLL_DEVICE=cuda or emu)\n");
    return 2;
  }
  std::vector<Rank> ranks(static_cast<size_t>(a.ranks));
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) fail("ncclGetUniqueId", nullptr);
  const size_t maxCount = a.maxBytes / sizeof(float);
  onRanks(ranks, [&](int r, Rank& rk) {
    if (ncclCommInitRank(&rk.comm, a.ranks, id, r) != ncclSuccess) fail("ncclCommInitRank", nullptr);
    ncclCommCuDevice(rk.comm, &rk.dev);
    atl::Result<cudaStream_t> s = backend().createStream(rk.dev);
    if (!s.ok()) fail("creating a stream", rk.comm);
    rk.stream = *s;
    if (ncclMemAlloc(&rk.devBuf, maxCount * sizeof(float)) != ncclSuccess) fail("ncclMemAlloc", rk.comm);
    rk.host.assign(maxCount, 0.0f);
  });
  std::printf("# device_allreduce_bench: %d rank(s) as threads, backend %s, %d iterations after %d warm-up\n", a.ranks,
              d.name(), a.iters, a.warmup);
  std::printf("# %12s %12s %12s %12s %12s %12s\n", "size(B)", "device(us)", "host(us)", "dev busbw", "host busbw",
              "dev/host");
  const double busFactor = a.ranks > 1 ? 2.0 * (a.ranks - 1) / a.ranks : 1.0;
  bool wrong = false;
  for (size_t bytes = a.minBytes; bytes <= a.maxBytes; bytes *= 2) {
    const size_t count = bytes / sizeof(float);
    // Check once: rank r contributes (r + 1) * (i % 13), so element i sums to n(n+1)/2 * (i % 13).
    onRanks(ranks, [&](int r, Rank& rk) {
      std::vector<float> v(count);
      for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>((r + 1) * static_cast<int>(i % 13));
      if (!d.copy(rk.dev, rk.devBuf, v.data(), bytes, rk.stream).ok()) fail("upload", rk.comm);
      if (ncclAllReduce(rk.devBuf, rk.devBuf, count, ncclFloat, ncclSum, rk.comm, rk.stream) != ncclSuccess)
        fail("ncclAllReduce", rk.comm);
      if (!d.copy(rk.dev, v.data(), rk.devBuf, bytes, rk.stream).ok()) fail("download", rk.comm);
      const float k = static_cast<float>(a.ranks * (a.ranks + 1) / 2);
      for (size_t i = 0; i < count; ++i)
        if (v[i] != k * static_cast<float>(i % 13)) {
          std::fprintf(stderr, "device_allreduce_bench: rank %d size %zu: element %zu is %g, expected %g\n", r, bytes,
                       i, static_cast<double>(v[i]), static_cast<double>(k * static_cast<float>(i % 13)));
          wrong = true;
          break;
        }
    });
    const double dev = timeCalls(ranks, count, true, a.warmup, a.iters);
    const double host = timeCalls(ranks, count, false, a.warmup, a.iters);
    const double devBw = static_cast<double>(bytes) / dev * busFactor / 1e9;
    const double hostBw = static_cast<double>(bytes) / host * busFactor / 1e9;
    std::printf("  %12zu %12.2f %12.2f %12.3f %12.3f %12.2f\n", bytes, dev * 1e6, host * 1e6, devBw, hostBw, host / dev);
    std::fflush(stdout);
  }
  onRanks(ranks, [&](int, Rank& rk) {
    ncclMemFree(rk.devBuf);
    ncclCommDestroy(rk.comm);
    (void)backend().destroyStream(rk.dev, rk.stream);
  });
  if (wrong) return 1;
  return 0;
}
