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

// Two thread-ranks on the emulated device; rank 1 hands the all-reduce a stream the device never
// made, so its staging fails before any data moves. Rank 1 gets the error at once, and rank 0,
// whose peer never sends, gets an error too instead of waiting forever.
TEST(EmuDevice, AFailedStagingStepFailsEveryRank) {
  test::SavedEnv env;
  env.save({"ATOLL_DEVICE", "ATOLL_TIMEOUT_MS"});
  setenv("ATOLL_DEVICE", "emu", 1);
  setenv("ATOLL_TIMEOUT_MS", "20000", 1);
  params::reloadForTesting();
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclResult_t> results(2, ncclSuccess);
  std::vector<double> seconds(2, 0);
  test::runRanks(2, [&](int rank) {
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRank(&comm, 2, id, rank), ncclSuccess) << ncclGetLastError(nullptr);
    void* buf = nullptr;
    ASSERT_EQ(ncclMemAlloc(&buf, 1 << 20), ncclSuccess);
    int bogus = 0;
    cudaStream_t stream = rank == 1 ? reinterpret_cast<cudaStream_t>(&bogus) : nullptr;
    auto t0 = std::chrono::steady_clock::now();
    results[static_cast<size_t>(rank)] = ncclAllReduce(buf, buf, (1 << 20) / 4, ncclFloat, ncclSum, comm, stream);
    seconds[static_cast<size_t>(rank)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(ncclMemFree(buf), ncclSuccess);
    ncclCommAbort(comm);
  });
  env.restore();
  params::reloadForTesting();
  EXPECT_EQ(results[1], ncclInvalidArgument);
  EXPECT_NE(results[0], ncclSuccess);
  EXPECT_LT(seconds[0], 15.0) << "rank 0 waited for its timeout instead of hearing of rank 1's failure";
}

// One-sided windows are read by the host's RMA engine, which cannot read device memory: a device
// buffer is refused with a reason instead of crashing the progress thread later.
TEST(EmuDevice, OneSidedWindowsOnDeviceMemoryAreRefused) {
  test::SavedEnv env;
  env.save({"ATOLL_DEVICE"});
  setenv("ATOLL_DEVICE", "emu", 1);
  params::reloadForTesting();
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclSuccess) << ncclGetLastError(nullptr);
  void* buf = nullptr;
  ASSERT_EQ(ncclMemAlloc(&buf, 4096), ncclSuccess);
  ncclWindow_t win = nullptr;
  EXPECT_EQ(ncclCommWindowRegister(comm, buf, 4096, &win, 0), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(comm)).find("device memory"), std::string::npos) << ncclGetLastError(comm);
  EXPECT_EQ(ncclMemFree(buf), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  env.restore();
  params::reloadForTesting();
}

}  // namespace
}  // namespace atl::device
