#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/params.h"
#include "device/cuda_device.h"
#include "device/emu_device.h"
#include "nccl.h"
#include "tests/common/saved_env.h"
#include "tests/common/thread_ranks.h"

namespace atl::device {
namespace {

class DeviceSelect : public ::testing::Test {
 protected:
  void SetUp() override { env_.save({"ATOLL_DEVICE"}); }
  void TearDown() override {
    env_.restore();
    params::reloadForTesting();
  }
  void use(const char* name) {
    setenv("ATOLL_DEVICE", name, 1);
    params::reloadForTesting();
  }
  test::SavedEnv env_;
};

/// Tests of the emulated GPU through the C API: ATOLL_DEVICE=emu for the test's duration.
class OnEmu : public DeviceSelect {
 protected:
  void SetUp() override {
    DeviceSelect::SetUp();
    env_.save({"ATOLL_TIMEOUT_MS"});
    setenv("ATOLL_TIMEOUT_MS", "20000", 1);
    use("emu");
  }
  static ncclComm_t oneRankComm() {
    ncclUniqueId id;
    EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ncclComm_t comm = nullptr;
    EXPECT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess) << ncclGetLastError(nullptr);
    return comm;
  }
};

TEST_F(DeviceSelect, AutoFallsBackToTheHostWithoutAGpu) {
  if (cudaPresent()) GTEST_SKIP() << "a CUDA driver sees a GPU here";
  use("auto");
  Result<const Device*> d = select();
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)->kind(), Kind::Host);
}

TEST_F(DeviceSelect, CudaWithoutADriverSaysWhy) {
  if (cudaPresent()) GTEST_SKIP() << "a CUDA driver sees a GPU here";
  use("cuda");
  Result<const Device*> d = select();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ncclInvalidUsage);
  const std::string why = lastErrorMessage();
  EXPECT_NE(why.find("ATOLL_DEVICE=cuda"), std::string::npos) << why;
  // The reason names what is missing: the driver library, its initialisation, or a GPU.
  EXPECT_TRUE(why.find("libcuda") != std::string::npos || why.find("GPU") != std::string::npos ||
              why.find("no CUDA backend") != std::string::npos)
      << why;

  // Through the C API too: the communicator is refused with the same message.
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("ATOLL_DEVICE=cuda"), std::string::npos);
  if (comm != nullptr) ncclCommDestroy(comm);
}

TEST_F(DeviceSelect, AnUnknownBackendListsTheValidOnes) {
  use("tpu");
  Result<const Device*> d = select();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("auto, host, cuda, emu"), std::string::npos) << lastErrorMessage();
}

TEST(EmuDevice, HostCodeCannotTouchDeviceMemory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // earlier tests left library threads running
  Result<void*> p = emu().allocate(4096);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(emu().needsStaging(*p));
  EXPECT_TRUE(emu().needsStaging(static_cast<char*>(*p) + 4095));
  int local = 0;
  EXPECT_FALSE(emu().needsStaging(&local));
  EXPECT_DEATH(static_cast<volatile char*>(*p)[17] = 1, "");
  EXPECT_TRUE(emu().release(*p).ok());
}

TEST(EmuDevice, CopiesRoundTripAndCheckTheirBounds) {
  Result<void*> p = emu().allocate(1000);
  ASSERT_TRUE(p.ok());
  std::vector<int> in(250), out(250, -1);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<int>(i * 7);
  ASSERT_TRUE(emu().copy(0, *p, in.data(), 1000, nullptr).ok());
  ASSERT_TRUE(emu().copy(0, out.data(), *p, 1000, nullptr).ok());
  EXPECT_EQ(in, out);
  // The allocation is rounded to a page, so only a copy past the page fails.
  Status past = emu().copy(0, out.data(), static_cast<char*>(*p) + 100, 4096, nullptr);
  EXPECT_EQ(past.code(), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("runs past a device allocation"), std::string::npos);
  EXPECT_TRUE(emu().release(*p).ok());
  EXPECT_EQ(emu().release(*p).code(), ncclInvalidArgument);
}

TEST(EmuDevice, ACopyWaitsForTheStreamsEarlierWork) {
  Result<cudaStream_t> s = emuStreamCreate();
  ASSERT_TRUE(s.ok());
  Result<void*> p = emu().allocate(sizeof(int));
  ASSERT_TRUE(p.ok());
  int* view = static_cast<int*>(emuHostView(*p, sizeof(int)));
  ASSERT_NE(view, nullptr);
  *view = 1;
  ASSERT_TRUE(emuEnqueue(*s, [view] {
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
                *view = 2;
              }).ok());
  int got = 0;
  ASSERT_TRUE(emu().copy(0, &got, *p, sizeof(int), *s).ok());
  EXPECT_EQ(got, 2);
  EXPECT_TRUE(emu().release(*p).ok());
  EXPECT_TRUE(emuStreamDestroy(*s).ok());
  EXPECT_EQ(emuStreamDestroy(*s).code(), ncclInvalidArgument);
}

TEST(EmuDevice, AStreamItDidNotMakeIsAnError) {
  int notAStream = 0;
  Status st = emu().synchronize(0, reinterpret_cast<cudaStream_t>(&notAStream));
  EXPECT_EQ(st.code(), ncclInvalidArgument);
  EXPECT_NE(lastErrorMessage().find("was not made by the emulated device"), std::string::npos);
}

// A call on device memory only enqueues (NCCL's stream semantics): it returns while its stream is
// still blocked behind earlier work, runs once the stream gets there, and later work on the
// stream sees its result. The gate that blocks the stream opens only after the call returned, so
// a call that waited for its stream would wait for the watchdog (and fail the timing check).
TEST_F(OnEmu, ACallOnDeviceMemoryReturnsBeforeItsStreamGetsThere) {
  ncclComm_t comm = oneRankComm();
  ASSERT_NE(comm, nullptr);
  Result<cudaStream_t> stream = emuStreamCreate();
  ASSERT_TRUE(stream.ok());
  constexpr size_t kCount = 4096;
  void* buf = nullptr;
  ASSERT_EQ(ncclMemAlloc(&buf, kCount * sizeof(float)), ncclSuccess);
  auto* view = static_cast<float*>(emuHostView(buf, kCount * sizeof(float)));
  ASSERT_NE(view, nullptr);
  std::atomic<bool> gate{false};
  // Earlier work on the stream: wait for the gate, then write the input.
  ASSERT_TRUE(emuEnqueue(*stream, [&] {
                while (!gate.load()) std::this_thread::sleep_for(std::chrono::microseconds(100));
                for (size_t i = 0; i < kCount; ++i) view[i] = static_cast<float>(i);
              }).ok());
  std::thread watchdog([&] {
    for (int i = 0; i < 500 && !gate.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    gate.store(true);
  });
  auto t0 = std::chrono::steady_clock::now();
  // Avg over one rank: the result is the input, so a call that ran early (on unwritten memory)
  // is seen too.
  EXPECT_EQ(ncclAllReduce(buf, buf, kCount, ncclFloat, ncclAvg, comm, *stream), ncclSuccess) << ncclGetLastError(comm);
  const double callSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_FALSE(gate.load()) << "the call returned only after its stream was unblocked";
  gate.store(true);
  watchdog.join();
  std::vector<float> out(kCount);
  ASSERT_TRUE(emu().copy(0, out.data(), buf, kCount * sizeof(float), *stream).ok());
  for (size_t i = 0; i < kCount; ++i) ASSERT_EQ(out[i], static_cast<float>(i)) << "element " << i;
  EXPECT_LT(callSeconds, 2.0);
  EXPECT_EQ(ncclMemFree(buf), ncclSuccess);
  EXPECT_EQ(ncclCommFinalize(comm), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_TRUE(emuStreamDestroy(*stream).ok());
}

// Two thread-ranks on the emulated device, connected by a first all-reduce on host memory. Rank 1
// then hands the all-reduce a stream the device never made: the call fails at once. Rank 0's call was queued (it returned success); it fails when rank
// 1 aborts, which must release rank 0's stream (a stream waiting forever would hang the GPU),
// become rank 0's asynchronous error, and make rank 0's next call fail instead of queueing.
TEST_F(OnEmu, AFailedQueuedCallReleasesItsStreamAndIsReported) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::atomic<bool> rank0Queued{false};
  test::runRanks(2, [&](int rank) {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, 2, id, rank), ncclSuccess) << ncclGetLastError(nullptr);
    void* buf = nullptr;
    ASSERT_EQ(ncclMemAlloc(&buf, 1 << 20), ncclSuccess);
    const size_t count = (1 << 20) / sizeof(float);
    // Links are made on first use: make them now, so rank 1's abort breaks a link rank 0 is
    // reading from (a rank waiting to connect to a peer that never comes waits for its timeout).
    std::vector<float> warm(count, 1.0f);
    EXPECT_EQ(ncclAllReduce(warm.data(), warm.data(), count, ncclFloat, ncclSum, comm, nullptr), ncclSuccess);
    if (rank == 1) {
      int bogus = 0;
      EXPECT_EQ(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, reinterpret_cast<cudaStream_t>(&bogus)),
                ncclInvalidArgument);
      while (!rank0Queued.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    } else {
      Result<cudaStream_t> stream = emuStreamCreate();
      ASSERT_TRUE(stream.ok());
      EXPECT_EQ(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, *stream), ncclSuccess);
      rank0Queued.store(true);
      auto t0 = std::chrono::steady_clock::now();
      EXPECT_TRUE(emu().synchronize(0, *stream).ok());
      const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_LT(waited, 15.0) << "rank 0 waited for its timeout instead of hearing of rank 1's abort";
      ncclResult_t async = ncclSuccess;
      EXPECT_EQ(ncclCommGetAsyncError(comm, &async), ncclSuccess);
      EXPECT_NE(async, ncclSuccess);
      EXPECT_NE(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, *stream), ncclSuccess);
      EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
      EXPECT_TRUE(emuStreamDestroy(*stream).ok());
    }
    EXPECT_EQ(ncclMemFree(buf), ncclSuccess);
  });
}

// A queued call whose peer never comes (here: never calls at all) must not hold up an abort: the
// abort makes the queued call fail at once and releases its stream.
TEST_F(OnEmu, AbortIsNotHeldUpByAQueuedCallWaitingForItsPeer) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::atomic<bool> rank0Done{false};
  test::runRanks(2, [&](int rank) {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, 2, id, rank), ncclSuccess) << ncclGetLastError(nullptr);
    if (rank == 0) {
      void* buf = nullptr;
      ASSERT_EQ(ncclMemAlloc(&buf, 4096), ncclSuccess);
      Result<cudaStream_t> stream = emuStreamCreate();
      ASSERT_TRUE(stream.ok());
      EXPECT_EQ(ncclAllReduce(buf, buf, 1024, ncclFloat, ncclSum, comm, *stream), ncclSuccess);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the proxy is waiting for rank 1 now
      auto t0 = std::chrono::steady_clock::now();
      EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
      EXPECT_TRUE(emu().synchronize(0, *stream).ok());  // released
      const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_LT(took, 5.0) << "the abort waited for the queued call's timeout";
      EXPECT_TRUE(emuStreamDestroy(*stream).ok());
      EXPECT_EQ(ncclMemFree(buf), ncclSuccess);
      rank0Done.store(true);
    } else {
      while (!rank0Done.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    }
  });
}

// One-sided windows are read by the host's RMA engine, which cannot read device memory: a device
// buffer is refused with a reason instead of crashing the progress thread later.
TEST_F(OnEmu, OneSidedWindowsOnDeviceMemoryAreRefused) {
  ncclComm_t comm = oneRankComm();
  ASSERT_NE(comm, nullptr);
  void* buf = nullptr;
  ASSERT_EQ(ncclMemAlloc(&buf, 4096), ncclSuccess);
  ncclWindow_t win = nullptr;
  EXPECT_EQ(ncclCommWindowRegister(comm, buf, 4096, &win, 0), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(comm)).find("device memory"), std::string::npos) << ncclGetLastError(comm);
  EXPECT_EQ(ncclMemFree(buf), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
}

}  // namespace
}  // namespace atl::device
