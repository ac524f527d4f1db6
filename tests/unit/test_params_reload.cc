// Reloading the parameter registry (ncclResetDebugInit, a public call) while other threads read it:
// readers must never see freed memory, and a string handed out stays valid and unchanged.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "base/params.h"
#include "nccl.h"
#include "tests/common/saved_env.h"

namespace atl::params {
namespace {

// Longer than any small-string buffer, so the value lives on the heap: a reload that frees it
// under a reader is a use-after-free that ASan sees, not a silent reuse of inline storage.
const std::string kAlgoA = "allreduce:ring;broadcast:ring;reduce:ring";
const std::string kAlgoB = "allreduce:tree;broadcast:ring;reduce:tree";

class ParamsReload : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_.save({"NCCL_ALGO", "NCCL_BUFFSIZE"});
    setenv("NCCL_ALGO", kAlgoA.c_str(), 1);
    setenv("NCCL_BUFFSIZE", "2M", 1);
    reloadForTesting();
  }
  void TearDown() override {
    saved_.restore();
    reloadForTesting();
  }
  test::SavedEnv saved_;
};

TEST_F(ParamsReload, ReadersRaceNcclResetDebugInit) {
  constexpr int kReaders = 4;
  constexpr int kResets = 2000;
  std::atomic<bool> done{false};
  std::atomic<long> reads{0}, wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < kReaders; ++t)
    readers.emplace_back([&] {
      while (!done.load(std::memory_order_relaxed)) {
        // Hold the reference while copying it: that is what every caller of getString does.
        const std::string& algo = getString(Id::Algo);
        const std::string copy = algo;
        if (copy != kAlgoA || getInt(Id::BuffSize) != (2 << 20) || source(Id::Algo) != Source::Env ||
            valueText(Id::BuffSize) != "2M")
          wrong.fetch_add(1, std::memory_order_relaxed);
        reads.fetch_add(1, std::memory_order_relaxed);
      }
    });
  for (int i = 0; i < kResets; ++i) ncclResetDebugInit();
  done.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_GT(reads.load(), 0);
  EXPECT_EQ(wrong.load(), 0) << "of " << reads.load() << " reads";
}

TEST_F(ParamsReload, StringHandedOutSurvivesAReloadUnchanged) {
  const std::string& held = getString(Id::Algo);
  ASSERT_EQ(held, kAlgoA);
  setenv("NCCL_ALGO", kAlgoB.c_str(), 1);
  ncclResetDebugInit();
  EXPECT_EQ(getString(Id::Algo), kAlgoB);
  // The caller that read before the reload still holds the value it read, not freed memory.
  EXPECT_EQ(held, kAlgoA);
}

TEST_F(ParamsReload, ReloadingAKnownConfigurationReusesItsSnapshot) {
  // Snapshots are kept for the process lifetime; memory must grow with distinct configurations,
  // not with the number of reloads.
  const std::string* a = &getString(Id::Algo);
  setenv("NCCL_ALGO", kAlgoB.c_str(), 1);
  reloadForTesting();
  const std::string* b = &getString(Id::Algo);
  EXPECT_NE(a, b);
  for (int i = 0; i < 100; ++i) {
    setenv("NCCL_ALGO", (i % 2 ? kAlgoB : kAlgoA).c_str(), 1);
    reloadForTesting();
    EXPECT_EQ(&getString(Id::Algo), i % 2 ? b : a);
  }
}

}  // namespace
}  // namespace atl::params
