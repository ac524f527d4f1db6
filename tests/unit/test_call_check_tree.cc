// ATOLL_CHECK at 64 ranks as threads: fingerprints go up a binomial tree and the verdict comes
// down (core/call_check.h), so a launch costs each rank at most ceil(log2 n) + 1 bootstrap
// messages, and a mismatch deep in the tree is reported by every rank with the same message.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "base/params.h"
#include "core/comm.h"
#include "nccl.h"

namespace {

constexpr int kRanks = 64;

class CheckTree : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("ATOLL_CHECK", "1", 1);
    atl::params::reloadForTesting();
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    comms_.assign(kRanks, nullptr);
    onEveryRank([&](int r) { ASSERT_EQ(ncclCommInitRank(&comms_[r], kRanks, id, r), ncclSuccess); });
  }
  void TearDown() override {
    for (ncclComm_t c : comms_)
      if (c) ncclCommDestroy(c);
    unsetenv("ATOLL_CHECK");
    atl::params::reloadForTesting();
  }
  template <class F>
  void onEveryRank(F f) {
    std::vector<std::thread> t;
    for (int r = 0; r < kRanks; ++r) t.emplace_back([&, r] { f(r); });
    for (std::thread& x : t) x.join();
  }
  std::vector<ncclComm_t> comms_;
};

TEST_F(CheckTree, MatchingLaunchesCostLogarithmicMessages) {
  std::vector<uint64_t> before(kRanks), after(kRanks);
  std::vector<ncclResult_t> res(kRanks);
  std::vector<float> got(kRanks);
  onEveryRank([&](int r) {
    before[r] = comms_[r]->bootstrap->messagesSent();
    float x = 1;
    res[r] = ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comms_[r], nullptr);
    got[r] = x;
    after[r] = comms_[r]->bootstrap->messagesSent();
  });
  uint64_t total = 0;
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(res[r], ncclSuccess) << "rank " << r;
    EXPECT_EQ(got[r], static_cast<float>(kRanks));
    EXPECT_LE(after[r] - before[r], 7u) << "rank " << r << ": one up, one down per child";
    total += after[r] - before[r];
  }
  EXPECT_EQ(total, 2u * (kRanks - 1)) << "each tree edge carries one message each way";
}

TEST_F(CheckTree, AMismatchDeepInTheTreeIsNamedByEveryRank) {
  const int odd = 37;
  std::vector<ncclResult_t> res(kRanks);
  std::vector<std::string> msg(kRanks);
  onEveryRank([&](int r) {
    std::vector<float> x(16, 1.0f);
    res[r] = ncclAllReduce(x.data(), x.data(), r == odd ? 9 : 8, ncclFloat, ncclSum, comms_[r], nullptr);
    msg[r] = ncclGetLastError(comms_[r]);
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(res[r], ncclInvalidUsage) << "rank " << r;
    EXPECT_NE(msg[r].find("rank 37 AllReduce(count 9"), std::string::npos) << "rank " << r << ": " << msg[r];
    EXPECT_EQ(msg[r], msg[0]) << "rank " << r;
  }
  // Nothing moved and nothing broke: the next matching launch works.
  onEveryRank([&](int r) {
    float x = 1;
    res[r] = ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comms_[r], nullptr);
    EXPECT_EQ(x, static_cast<float>(kRanks)) << "rank " << r;
  });
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(res[r], ncclSuccess) << "rank " << r;
}

TEST_F(CheckTree, ADifferentCollectiveIsNamed) {
  // Rank 50 all-reduces while the others broadcast: the lowest rank unlike rank 0 is named.
  std::vector<ncclResult_t> res(kRanks);
  std::vector<std::string> msg(kRanks);
  onEveryRank([&](int r) {
    float x = 1;
    res[r] = r == 50 ? ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comms_[r], nullptr)
                     : ncclBroadcast(&x, &x, 1, ncclFloat, 0, comms_[r], nullptr);
    msg[r] = ncclGetLastError(comms_[r]);
  });
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(res[r], ncclInvalidUsage) << "rank " << r;
    EXPECT_NE(msg[r].find("rank 0 called Broadcast"), std::string::npos) << msg[r];
    EXPECT_NE(msg[r].find("rank 50 AllReduce"), std::string::npos) << msg[r];
  }
}

}  // namespace
