// Device memory shared between processes (Device::exportMemory / importMemory): a second process,
// started fresh as CUDA requires (fork + exec of this binary, running the disabled
// DeviceIpcChild.Run), opens a handle, reads what the exporter wrote and writes back; handles of
// exited processes and malformed handles fail with a clear error. Runs under ATOLL_DEVICE=emu in ctest and =cuda in
// perf/gpu/check.sh.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/params.h"
#include "core/call_report.h"
#include "core/device_intranode.h"
#include "core/device_ipc_cache.h"
#include "device/device.h"
#include "nccl.h"
#include "tests/common/saved_env.h"
#include "tests/common/thread_ranks.h"

extern char** environ;

namespace atl::device {
namespace {

constexpr size_t kBytes = 64 << 10;
constexpr size_t kOffset = 4096;  // exported pointer inside its allocation
constexpr size_t kWindow = 4096;  // what the child reads and overwrites

uint8_t pattern(size_t i) { return static_cast<uint8_t>(i * 7 + 1); }

const Device& selected() {
  Result<const Device*> d = select();
  if (!d.ok()) {
    ADD_FAILURE() << "ATOLL_DEVICE: " << lastErrorMessage();
    return host();
  }
  return **d;
}

bool writeAll(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::write(fd, c, n);
    if (w <= 0) return false;
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

/// Reads n bytes or fails after `ms` (a child that died must not hang the test).
bool readAll(int fd, void* p, size_t n, int ms = 30000) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    pollfd pfd{fd, POLLIN, 0};
    if (::poll(&pfd, 1, ms) <= 0) return false;
    ssize_t r = ::read(fd, c, n);
    if (r <= 0) return false;
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

/// This binary again, running only DeviceIpcChild.DISABLED_Run in `mode`, talking over two pipes.
struct Child {
  pid_t pid = -1;
  int toChild = -1;
  int fromChild = -1;

  static Child start(const std::string& mode) {
    int down[2], up[2];
    Child c;
    if (::pipe(down) != 0 || ::pipe(up) != 0) return c;
    // Everything the child needs is built before fork: only exec runs after it.
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
    env.push_back("ATOLL_IPC_CHILD=" + mode + ":" + std::to_string(down[0]) + ":" + std::to_string(up[1]));
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string exe = "/proc/self/exe", filter = "--gtest_filter=DeviceIpcChild.DISABLED_Run",
                also = "--gtest_also_run_disabled_tests";
    char* argv[] = {exe.data(), filter.data(), also.data(), nullptr};
    c.pid = ::fork();
    if (c.pid == 0) {
      ::close(down[1]);
      ::close(up[0]);
      ::execve(exe.c_str(), argv, envp.data());
      ::_exit(127);
    }
    ::close(down[0]);
    ::close(up[1]);
    c.toChild = down[1];
    c.fromChild = up[0];
    return c;
  }

  /// The child's exit status (-1 if it had to be killed after `seconds`).
  int wait(int seconds = 60) {
    ::close(toChild);
    ::close(fromChild);
    int status = 0;
    for (int i = 0; i < seconds * 100; ++i) {
      if (::waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return -1;
  }
};

TEST(DeviceIpc, APeerProcessReadsAndWritesExportedMemory) {
  const Device& d = selected();
  if (d.kind() == Kind::Host) GTEST_SKIP() << "the host backend has no device memory";
  Result<void*> mem = d.allocate(kBytes);
  ASSERT_TRUE(mem.ok());
  auto* base = static_cast<uint8_t*>(*mem);
  std::vector<uint8_t> host(kBytes);
  for (size_t i = 0; i < kBytes; ++i) host[i] = pattern(i);
  ASSERT_TRUE(d.copy(d.currentDevice(), base, host.data(), kBytes, nullptr).ok());
  Result<IpcHandle> h = d.exportMemory(base + kOffset);
  ASSERT_TRUE(h.ok()) << lastErrorMessage();
  EXPECT_EQ(h->offset, kOffset);

  Child c = Child::start("open");
  ASSERT_GT(c.pid, 0);
  ASSERT_TRUE(writeAll(c.toChild, &*h, sizeof(IpcHandle)));
  char done = 0;
  EXPECT_TRUE(readAll(c.fromChild, &done, 1)) << "the child did not report";
  EXPECT_EQ(done, 'k');
  EXPECT_EQ(c.wait(), 0);

  ASSERT_TRUE(d.copy(d.currentDevice(), host.data(), base, kBytes, nullptr).ok());
  for (size_t i = 0; i < kBytes; ++i) {
    const bool written = i >= kOffset && i < kOffset + kWindow;
    ASSERT_EQ(host[i], written ? 0xc3 : pattern(i)) << "byte " << i;
  }
  EXPECT_TRUE(d.release(base).ok());
}

TEST(DeviceIpc, AHandleOfAProcessThatExitedIsAClearError) {
  const Device& d = selected();
  if (d.kind() == Kind::Host) GTEST_SKIP() << "the host backend has no device memory";
  Child c = Child::start("export");
  ASSERT_GT(c.pid, 0);
  IpcHandle h;
  ASSERT_TRUE(readAll(c.fromChild, &h, sizeof(h)));
  EXPECT_EQ(c.wait(), 0);
  Result<void*> p = d.importMemory(h);
  ASSERT_FALSE(p.ok()) << "opened the memory of an exited process";
  EXPECT_FALSE(lastErrorMessage().empty());
}

TEST(DeviceIpc, MalformedHandlesAreRefused) {
  const Device& d = selected();
  IpcHandle h;
  h.backend = static_cast<uint8_t>(d.kind());
  h.size = 4096;
  h.magic = 0x12345678;
  EXPECT_EQ(validate(h, d).code(), ncclInvalidArgument);
  h.magic = IpcHandle::kMagic;
  h.offset = 4096;
  EXPECT_EQ(validate(h, d).code(), ncclInvalidArgument);
  h.offset = 0;
  EXPECT_TRUE(validate(h, d).ok());
  h.backend = static_cast<uint8_t>(d.kind() == Kind::Emu ? Kind::Cuda : Kind::Emu);
  EXPECT_EQ(validate(h, d).code(), ncclInvalidUsage);
  EXPECT_EQ(d.importMemory(h).status().code(), ncclInvalidUsage);
}

TEST(DeviceIpc, TheHostBackendHasNothingToExport) {
  int x = 0;
  EXPECT_EQ(host().exportMemory(&x).status().code(), ncclInvalidUsage);
  EXPECT_EQ(host().closeImported(&x).code(), ncclInvalidUsage);
}

TEST(DeviceIpc, PeerAccessIsWithinADeviceAlwaysAndAcrossThemOnlyWhereDevicesReachEachOther) {
  EXPECT_TRUE(host().enablePeerAccess(0, 0).ok());
  const Status across = host().enablePeerAccess(0, 1);
  EXPECT_EQ(across.code(), ncclInvalidUsage);
  EXPECT_NE(lastErrorMessage().find("no peer access"), std::string::npos) << lastErrorMessage();
  const Device& d = selected();
  if (d.kind() == Kind::Emu) {
    EXPECT_TRUE(d.enablePeerAccess(0, 2).ok()) << "the emulated devices share one memory";
  }
}

TEST(DeviceIpc, ImportedAndOwnMemoryAreNotMixedUp) {
  const Device& d = selected();
  if (d.kind() != Kind::Emu) GTEST_SKIP() << "CUDA cannot import in the exporting process";
  Result<void*> mem = d.allocate(kBytes);
  ASSERT_TRUE(mem.ok());
  Result<IpcHandle> h = d.exportMemory(*mem);
  ASSERT_TRUE(h.ok());
  Result<void*> alias = d.importMemory(*h);
  ASSERT_TRUE(alias.ok()) << lastErrorMessage();
  EXPECT_NE(*alias, *mem);
  const uint32_t v = 0xfeedf00d;
  uint32_t got = 0;
  ASSERT_TRUE(d.copy(0, *mem, &v, 4, nullptr).ok());
  ASSERT_TRUE(d.copy(0, &got, *alias, 4, nullptr).ok());
  EXPECT_EQ(got, v) << "an import sees the exporter's bytes";
  EXPECT_EQ(d.release(*alias).code(), ncclInvalidArgument);
  EXPECT_EQ(d.closeImported(*mem).code(), ncclInvalidArgument);
  EXPECT_EQ(d.exportMemory(*alias).status().code(), ncclInvalidArgument);
  EXPECT_TRUE(d.closeImported(*alias).ok());
  EXPECT_TRUE(d.release(*mem).ok());
}

TEST(DeviceIpc, AnAllocationMadeWhereAFreedOneWasHasAnotherHandle) {
  // The mapping cache (core/device_ipc_cache.h) relies on it: a handle names an allocation, not
  // an address, so a buffer freed and made again is never served the old mapping.
  const Device& d = selected();
  if (d.kind() == Kind::Host) GTEST_SKIP() << "the host backend has no device memory";
  Result<void*> first = d.allocate(kBytes);
  ASSERT_TRUE(first.ok());
  Result<IpcHandle> h1 = d.exportMemory(*first);
  ASSERT_TRUE(h1.ok()) << lastErrorMessage();
  ASSERT_TRUE(d.release(*first).ok());
  Result<void*> second = d.allocate(kBytes);
  ASSERT_TRUE(second.ok());
  Result<IpcHandle> h2 = d.exportMemory(*second);
  ASSERT_TRUE(h2.ok()) << lastErrorMessage();
  EXPECT_NE(std::memcmp(h1->cuda, h2->cuda, sizeof h1->cuda), 0)
      << "same handle for two allocations (" << (*first == *second ? "same" : "other") << " address)";
  EXPECT_TRUE(d.release(*second).ok());
}

/// The process's cache of peers' mappings, on allocations of this process imported back (the
/// emulator allows that; CUDA refuses its own handles).
class DeviceIpcCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (selected().kind() != Kind::Emu) GTEST_SKIP() << "CUDA cannot import in the exporting process";
    env_.save({"ATOLL_DEVICE_IPC_CACHE"});
  }
  void TearDown() override {
    for (void* p : mem_) EXPECT_TRUE(selected().release(p).ok());
    env_.restore();
    params::reloadForTesting();
  }
  void limit(const char* n) {
    setenv("ATOLL_DEVICE_IPC_CACHE", n, 1);
    params::reloadForTesting();
  }
  /// A new allocation whose first word is `tag`, exported at `offset`.
  IpcHandle make(uint32_t tag, size_t offset = 0) {
    const Device& d = selected();
    Result<void*> mem = d.allocate(kBytes);
    EXPECT_TRUE(mem.ok());
    mem_.push_back(*mem);
    EXPECT_TRUE(d.copy(0, *mem, &tag, sizeof tag, nullptr).ok());
    Result<IpcHandle> h = d.exportMemory(static_cast<std::byte*>(*mem) + offset);
    EXPECT_TRUE(h.ok());
    return *h;
  }
  uint32_t firstWord(const std::byte* mapped, const IpcHandle& h) {
    uint32_t got = 0;
    EXPECT_TRUE(selected().copy(0, &got, mapped - h.offset, sizeof got, nullptr).ok());
    return got;
  }
  test::SavedEnv env_;
  std::vector<void*> mem_;
  DeviceIpcCache cache;  // a fresh one per test, not the process's
  const Device& d = selected();
};

TEST_F(DeviceIpcCacheTest, OneAllocationIsMappedOnceAcrossUsesAndOffsets) {
  limit("8");
  const IpcHandle a = make(11);
  IpcHandle a4k = a;
  a4k.offset = 4096;  // another pointer into the same allocation
  for (int round = 0; round < 3; ++round) {
    Result<std::byte*> p = cache.acquire(d, a, 0);
    Result<std::byte*> q = cache.acquire(d, a4k, 0);
    ASSERT_TRUE(p.ok() && q.ok()) << lastErrorMessage();
    EXPECT_EQ(*q - *p, 4096);
    EXPECT_EQ(firstWord(*p, a), 11u);
    cache.release(d, a, 0);
    cache.release(d, a4k, 0);
  }
  EXPECT_EQ(cache.imports(), 1u) << "three calls on one buffer map it once";
  EXPECT_EQ(cache.mapped(), 1u) << "kept for the next call";
  // Opened in another device's context, it is another mapping.
  ASSERT_TRUE(cache.acquire(d, a, 1).ok());
  cache.release(d, a, 1);
  EXPECT_EQ(cache.imports(), 2u);
}

TEST_F(DeviceIpcCacheTest, AFreedAndRemadeBufferIsMappedAgainNotServedTheOldPages) {
  limit("8");
  const IpcHandle old = make(1);
  ASSERT_TRUE(cache.acquire(d, old, 0).ok());
  cache.release(d, old, 0);
  // Free it and make another: the emulator's memfd gets the same descriptor number, and often
  // the same address.
  ASSERT_TRUE(d.release(mem_.back()).ok());
  mem_.pop_back();
  const IpcHandle again = make(2);
  EXPECT_EQ(again.fd, old.fd) << "the test is about a reused descriptor";
  Result<std::byte*> p = cache.acquire(d, again, 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(firstWord(*p, again), 2u) << "the new allocation's bytes, not the freed one's";
  cache.release(d, again, 0);
  EXPECT_EQ(cache.imports(), 2u);
}

TEST_F(DeviceIpcCacheTest, IdleMappingsBeyondTheLimitAreClosedLeastRecentlyUsedFirst) {
  limit("2");
  const IpcHandle a = make(1), b = make(2), c = make(3);
  for (const IpcHandle& h : {a, b, c}) {
    ASSERT_TRUE(cache.acquire(d, h, 0).ok());
  }
  EXPECT_EQ(cache.mapped(), 3u) << "mappings in use are never closed";
  cache.release(d, b, 0);
  cache.release(d, a, 0);
  cache.release(d, c, 0);
  EXPECT_EQ(cache.mapped(), 2u);
  // b went idle first, so it was closed: using it maps again, a and c do not.
  ASSERT_TRUE(cache.acquire(d, a, 0).ok());
  ASSERT_TRUE(cache.acquire(d, c, 0).ok());
  EXPECT_EQ(cache.imports(), 3u);
  ASSERT_TRUE(cache.acquire(d, b, 0).ok());
  EXPECT_EQ(cache.imports(), 4u);
  for (const IpcHandle& h : {a, b, c}) cache.release(d, h, 0);
  limit("0");
  cache.release(d, a, 0);  // a release of nothing held changes nothing
  EXPECT_EQ(cache.mapped(), 2u);
  ASSERT_TRUE(cache.acquire(d, a, 0).ok());
  cache.release(d, a, 0);
  EXPECT_EQ(cache.mapped(), 0u) << "limit 0: nothing is kept";
}

/// All-reduce between thread-ranks of this process on device memory, through the direct path
/// (core/device_intranode.h) when every rank's buffers are device memory, staged otherwise.
class DeviceIntraNode : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.save({"ATOLL_DEVICE_IPC_MIN"});
    setenv("ATOLL_DEVICE_IPC_MIN", "1", 1);
    params::reloadForTesting();
  }
  void TearDown() override {
    env_.restore();
    params::reloadForTesting();
  }
  /// Runs a 3-rank float-sum all-reduce of rank+1 in place, rank `hostRank` on host memory (-1:
  /// none), and returns how many all-reduces took the direct path on each rank.
  std::vector<uint64_t> run(int hostRank) {
    const Device& d = selected();
    constexpr int kRanks = 3;
    constexpr size_t kCount = 100000;  // not a multiple of the 16-element slice step
    ncclUniqueId id;
    EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    std::vector<uint64_t> direct(kRanks, 0);
    reports_.assign(kRanks, std::nullopt);
    test::runRanks(kRanks, [&](int r) {
      ncclComm_t comm = nullptr;
      ASSERT_EQ(ncclCommInitRank(&comm, kRanks, id, r), ncclSuccess) << ncclGetLastError(nullptr);
      std::vector<float> host(kCount, static_cast<float>(r + 1));
      void* buf = host.data();
      if (r != hostRank) {
        Result<void*> mem = d.allocate(kCount * 4);
        ASSERT_TRUE(mem.ok());
        buf = *mem;
      }
      Result<cudaStream_t> s = d.createStream(0);
      ASSERT_TRUE(s.ok());
      ASSERT_TRUE(d.copy(0, buf, host.data(), kCount * 4, *s).ok());
      EXPECT_EQ(ncclAllReduce(buf, buf, kCount, ncclFloat, ncclSum, comm, *s), ncclSuccess) << ncclGetLastError(comm);
      ASSERT_TRUE(d.copy(0, host.data(), buf, kCount * 4, *s).ok());
      for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(host[i], 6.0f) << "rank " << r << " element " << i;
      direct[static_cast<size_t>(r)] = deviceIntraNodeCalls(comm);
      reports_[static_cast<size_t>(r)] = lastCall(comm);
      EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
      EXPECT_TRUE(d.destroyStream(0, *s).ok());
      if (r != hostRank) {
        EXPECT_TRUE(d.release(buf).ok());
      }
    });
    return direct;
  }
  /// Each rank's report of its last call after run() (core/call_report.h).
  std::vector<std::optional<CallReport>> reports_;
  test::SavedEnv env_;
};

TEST_F(DeviceIntraNode, DeviceBuffersOnEveryRankAreReducedInPlace) {
  if (!selected().hasKernels()) GTEST_SKIP() << "no device kernels in this backend";
  EXPECT_EQ(run(-1), (std::vector<uint64_t>{1, 1, 1}));
  // The report is the all-reduce's, not the path's internal all-gathers'.
  for (const std::optional<CallReport>& r : reports_) {
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->coll, algo::Coll::AllReduce);
    EXPECT_EQ(r->algo, algo::Algo::Direct);
    EXPECT_STREQ(r->proto, "DeviceIpc");
    EXPECT_EQ(r->count, 100000u);
    EXPECT_EQ(r->seq, 1u) << "one call reported, the exchanges not counted";
  }
}

TEST_F(DeviceIntraNode, OneRankOnHostMemoryMakesEveryRankStage) {
  if (!selected().hasKernels()) GTEST_SKIP() << "no device kernels in this backend";
  EXPECT_EQ(run(1), (std::vector<uint64_t>{0, 0, 0}));
  for (const std::optional<CallReport>& r : reports_) {
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->coll, algo::Coll::AllReduce) << "the staged all-reduce, not the exchange that decided it";
    EXPECT_STRNE(r->proto, "DeviceIpc");
    EXPECT_EQ(r->seq, 1u);
  }
}

// NCCL reads a broadcast's input only on the root and writes a reduce's output only there: the
// other ranks may pass NULL, and the direct path must neither need nor touch those buffers.
TEST_F(DeviceIntraNode, BuffersOnlyTheRootUsesMayBeNullElsewhere) {
  if (!selected().hasKernels()) GTEST_SKIP() << "no device kernels in this backend";
  const Device& d = selected();
  constexpr int kRanks = 3, kRoot = 1;
  constexpr size_t kCount = 5000;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<uint64_t> direct(kRanks, 0);
  test::runRanks(kRanks, [&](int r) {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, kRanks, id, r), ncclSuccess) << ncclGetLastError(nullptr);
    Result<cudaStream_t> s = d.createStream(0);
    Result<void*> in = d.allocate(kCount * 4), out = d.allocate(kCount * 4);
    ASSERT_TRUE(s.ok() && in.ok() && out.ok());
    std::vector<float> host(kCount, static_cast<float>(r + 1));
    ASSERT_TRUE(d.copy(0, *in, host.data(), kCount * 4, *s).ok());
    const bool root = r == kRoot;
    EXPECT_EQ(ncclBroadcast(root ? *in : nullptr, *out, kCount, ncclFloat, kRoot, comm, *s), ncclSuccess)
        << ncclGetLastError(comm);
    ASSERT_TRUE(d.copy(0, host.data(), *out, kCount * 4, *s).ok());
    for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(host[i], kRoot + 1.0f) << "broadcast, rank " << r << " element " << i;
    EXPECT_EQ(ncclReduce(*in, root ? *out : nullptr, kCount, ncclFloat, ncclSum, kRoot, comm, *s), ncclSuccess)
        << ncclGetLastError(comm);
    if (root) {
      ASSERT_TRUE(d.copy(0, host.data(), *out, kCount * 4, *s).ok());
      for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(host[i], 6.0f) << "reduce, element " << i;
    }
    ASSERT_TRUE(d.synchronize(0, *s).ok());
    direct[static_cast<size_t>(r)] = deviceIntraNodeCalls(comm);
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
    EXPECT_TRUE(d.destroyStream(0, *s).ok());
    EXPECT_TRUE(d.release(*in).ok());
    EXPECT_TRUE(d.release(*out).ok());
  });
  EXPECT_EQ(direct, (std::vector<uint64_t>{2, 2, 2})) << "both calls on the direct path, on every rank";
}

/// The child's side, disabled: only Child::start runs it.
TEST(DeviceIpcChild, DISABLED_Run) {
  const char* spec = std::getenv("ATOLL_IPC_CHILD");
  if (spec == nullptr) GTEST_SKIP() << "runs only as the child of a DeviceIpc test";
  char mode[16] = {};
  int in = -1, out = -1;
  ASSERT_EQ(std::sscanf(spec, "%15[a-z]:%d:%d", mode, &in, &out), 3) << spec;
  const Device& d = selected();
  if (std::string(mode) == "export") {
    Result<void*> mem = d.allocate(kBytes);
    ASSERT_TRUE(mem.ok());
    Result<IpcHandle> h = d.exportMemory(*mem);
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(writeAll(out, &*h, sizeof(IpcHandle)));
    return;  // exits with the allocation: the handle now names nothing
  }
  IpcHandle h;
  ASSERT_TRUE(readAll(in, &h, sizeof(h)));
  Result<void*> p = d.importMemory(h);
  ASSERT_TRUE(p.ok()) << lastErrorMessage();
  std::vector<uint8_t> seen(kWindow);
  ASSERT_TRUE(d.copy(d.currentDevice(), seen.data(), *p, kWindow, nullptr).ok());
  for (size_t i = 0; i < kWindow; ++i) ASSERT_EQ(seen[i], pattern(kOffset + i)) << "byte " << i;
  std::vector<uint8_t> mark(kWindow, 0xc3);
  ASSERT_TRUE(d.copy(d.currentDevice(), *p, mark.data(), kWindow, nullptr).ok());
  ASSERT_TRUE(d.closeImported(*p).ok());
  ASSERT_TRUE(writeAll(out, "k", 1));
}

}  // namespace
}  // namespace atl::device
