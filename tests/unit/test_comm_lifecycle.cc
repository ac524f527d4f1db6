// Communicator life cycle beyond plain init: ncclCommShrink (survivors rebuild without excluded,
// possibly dead, ranks), non-blocking init (config.blocking = 0), abort and revoke while another
// thread is blocked in a collective. Ranks are threads.
#include <gtest/gtest.h>

#include <fcntl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "nccl.h"
#include "tests/common/thread_ranks.h"

namespace {

using Clock = std::chrono::steady_clock;

using atl::test::allReduceRankSum;
using atl::test::initAll;
using atl::test::runRanks;

TEST(Shrink, SurvivorsRebuildWithoutAnAbortedRank) {
  auto comms = initAll(4);
  const int gone = 2;
  runRanks(4, [&](int r) {
    if (r == gone) {
      // The excluded rank leaves abruptly; survivors must not wait for it.
      EXPECT_EQ(ncclCommAbort(comms[r]), ncclSuccess);
      return;
    }
    int exclude[] = {gone};
    ncclComm_t child = nullptr;
    ASSERT_EQ(ncclCommShrink(comms[r], exclude, 1, &child, nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess)
        << ncclGetLastError(comms[r]);
    ASSERT_NE(child, nullptr);
    int n = 0, me = -1;
    EXPECT_EQ(ncclCommCount(child, &n), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(child, &me), ncclSuccess);
    EXPECT_EQ(n, 3);
    EXPECT_EQ(me, r < gone ? r : r - 1);  // survivors keep their order, the gap closes
    EXPECT_EQ(allReduceRankSum(child, me), 1.0f + 2.0f + 3.0f);
    EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
  });
}

// The new id travels down a binomial tree of the survivors (core/split.cc initChild): with 20 of
// 23 ranks left, some forward it two hops deep while others have not even entered the shrink.
TEST(Shrink, TwentySurvivorsGetTheIdDownATree) {
  constexpr int n = 23;
  auto comms = initAll(n);
  const std::vector<int> gone = {0, 7, 22};
  runRanks(n, [&](int r) {
    if (std::find(gone.begin(), gone.end(), r) != gone.end()) {
      EXPECT_EQ(ncclCommAbort(comms[r]), ncclSuccess);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds((r * 7) % 40));  // arrive out of order
    std::vector<int> exclude = gone;
    ncclComm_t child = nullptr;
    ASSERT_EQ(ncclCommShrink(comms[r], exclude.data(), static_cast<int>(exclude.size()), &child, nullptr,
                             NCCL_SHRINK_ABORT),
              ncclSuccess)
        << ncclGetLastError(comms[r]);
    int count = 0, me = -1;
    EXPECT_EQ(ncclCommCount(child, &count), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(child, &me), ncclSuccess);
    EXPECT_EQ(count, n - 3);
    EXPECT_EQ(me, r - 1 - (r > 7 ? 1 : 0));
    EXPECT_EQ(allReduceRankSum(child, me), static_cast<float>((n - 3) * (n - 2) / 2));
    EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
  });
}

TEST(Shrink, AbortFlagAndTwoExcluded) {
  auto comms = initAll(5);
  runRanks(5, [&](int r) {
    if (r == 0 || r == 3) {
      EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
      return;
    }
    int exclude[] = {3, 0};
    ncclComm_t child = nullptr;
    ASSERT_EQ(ncclCommShrink(comms[r], exclude, 2, &child, nullptr, NCCL_SHRINK_ABORT), ncclSuccess)
        << ncclGetLastError(comms[r]);
    int me = -1;
    ASSERT_EQ(ncclCommUserRank(child, &me), ncclSuccess);
    EXPECT_EQ(allReduceRankSum(child, me), 6.0f);
    EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
  });
}

TEST(Shrink, BadArguments) {
  auto comms = initAll(1);
  ncclComm_t child = nullptr;
  int self[] = {0};
  EXPECT_EQ(ncclCommShrink(comms[0], self, 1, &child, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidUsage);
  int outOfRange[] = {7};
  EXPECT_EQ(ncclCommShrink(comms[0], outOfRange, 1, &child, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(ncclCommShrink(comms[0], nullptr, 1, &child, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(ncclCommShrink(comms[0], nullptr, 0, nullptr, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(ncclCommShrink(comms[0], nullptr, 0, &child, nullptr, 42), ncclInvalidArgument);
  EXPECT_EQ(ncclCommShrink(nullptr, nullptr, 0, &child, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  // Excluding nobody is a copy of the communicator.
  ASSERT_EQ(ncclCommShrink(comms[0], nullptr, 0, &child, nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess);
  EXPECT_EQ(allReduceRankSum(child, 0), 1.0f);
  EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);
  EXPECT_EQ(ncclCommDestroy(comms[0]), ncclSuccess);
}

TEST(NonBlockingInit, InProgressThenSuccess) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  const int n = 3;
  runRanks(n, [&](int r) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm = nullptr;
    ncclResult_t res = ncclCommInitRankConfig(&comm, n, id, r, &config);
    ASSERT_TRUE(res == ncclInProgress || res == ncclSuccess) << ncclGetErrorString(res);
    ASSERT_NE(comm, nullptr);
    ncclResult_t state = ncclInProgress;
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (state == ncclInProgress && Clock::now() < deadline) {
      ASSERT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(state, ncclSuccess);
    EXPECT_EQ(allReduceRankSum(comm, r), 6.0f);
    EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  });
}

TEST(NonBlockingInit, DestroyWhileWaitingForAMissingRankReturnsPromptly) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ASSERT_EQ(ncclCommInitRankConfig(&comm, 2, id, 0, &config), ncclInProgress);  // rank 1 never comes
  ncclResult_t state = ncclSuccess;
  ASSERT_EQ(ncclCommGetAsyncError(comm, &state), ncclSuccess);
  EXPECT_EQ(state, ncclInProgress);
  auto start = Clock::now();
  EXPECT_EQ(ncclCommDestroy(comm), ncclSuccess);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

int openFds() {
  int n = 0;
  for (int fd = 0; fd < 4096; ++fd)
    if (fcntl(fd, F_GETFD) != -1) ++n;
  return n;
}

int threadCount() {
  // Sanitizer runtimes start a helper thread at the first thread creation: make that happen first.
  static const bool warm = [] {
    std::thread([] {}).join();
    return true;
  }();
  (void)warm;
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  return -1;
}

/// Waits (up to 2 s) for exiting helper threads to finish closing their sockets; `othersFds` are
/// fds that may legitimately remain open elsewhere (at most that many).
void expectBackTo(int fds, int threads, const char* what, int othersFds = 0) {
  for (int i = 0; i < 200 && (openFds() > fds + othersFds || threadCount() > threads); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_GE(openFds(), fds);
  EXPECT_LE(openFds(), fds + othersFds) << "file descriptors leaked by " << what;
  EXPECT_EQ(threadCount(), threads) << "threads left running by " << what;
}

TEST(Abort, DuringNonBlockingInitReturnsPromptlyAndLeavesNothing) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);  // starts the root's thread and listener here
  const int fds = openFds(), threads = threadCount();
  {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclComm_t comm = nullptr;
    ASSERT_EQ(ncclCommInitRankConfig(&comm, 3, id, 1, &config), ncclInProgress);  // ranks 0 and 2 never come
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto start = Clock::now();
    EXPECT_EQ(ncclCommAbort(comm), ncclSuccess);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  }
  // The root (not the communicator) keeps the connection this rank joined on, if it got that far,
  // until every rank has joined or its own deadline passes: one fd that belongs to the root.
  expectBackTo(fds, threads, "abort during init", 1);
}

TEST(Abort, ReturnsPromptlyWhileAnotherThreadIsBlockedInACollective) {
  const int fdsBefore = openFds(), threadsBefore = threadCount();
  {
    auto comms = initAll(2);
    std::atomic<ncclResult_t> blockedResult{ncclSuccess};
    // Rank 0 enters an all-reduce that rank 1 never joins, so it can only end by abort.
    std::thread blocked([&] {
      std::vector<float> v(1 << 20, 1.0f);
      blockedResult = ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comms[0], nullptr);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto start = Clock::now();
    EXPECT_EQ(ncclCommAbort(comms[0]), ncclSuccess);
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
    blocked.join();
    EXPECT_NE(blockedResult.load(), ncclSuccess);
    // The peer sees its links broken and can be aborted too.
    EXPECT_EQ(ncclCommAbort(comms[1]), ncclSuccess);
  }
  expectBackTo(fdsBefore, threadsBefore, "init + abort");
}

TEST(Revoke, IdleThenOnlyManagementCallsAndSplitWorks) {
  auto comms = initAll(4);
  runRanks(4, [&](int r) {
    ncclComm_t c = comms[r];
    EXPECT_EQ(ncclCommRevoke(c, 1), ncclInvalidArgument);  // flags must be NCCL_REVOKE_DEFAULT
    ASSERT_EQ(ncclCommRevoke(c, NCCL_REVOKE_DEFAULT), ncclSuccess) << ncclGetLastError(c);
    EXPECT_EQ(ncclCommRevoke(c, NCCL_REVOKE_DEFAULT), ncclSuccess);  // idempotent
    ncclResult_t async = ncclInternalError;
    EXPECT_EQ(ncclCommGetAsyncError(c, &async), ncclSuccess);
    EXPECT_EQ(async, ncclSuccess);  // quiescent once revoke returned
    float x = 1;
    EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, c, nullptr), ncclInvalidUsage);
    EXPECT_NE(std::string(ncclGetLastError(c)).find("revoked"), std::string::npos) << ncclGetLastError(c);
    EXPECT_EQ(ncclSend(&x, 1, ncclFloat, (r + 1) % 4, c, nullptr), ncclInvalidUsage);
    EXPECT_EQ(ncclCommFinalize(c), ncclInvalidUsage);  // invalid after revoke, as in NCCL
    ncclComm_t child = nullptr;
    ASSERT_EQ(ncclCommSplit(c, r % 2, r, &child, nullptr), ncclSuccess) << ncclGetLastError(c);
    int me = -1;
    ASSERT_EQ(ncclCommUserRank(child, &me), ncclSuccess);
    EXPECT_EQ(allReduceRankSum(child, me), 3.0f);  // ranks {0,2} and {1,3}: 1 + 2
    EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
  });
}

TEST(Revoke, StopsACollectiveBlockedOnAnAbsentPeerThenShrink) {
  auto comms = initAll(3);
  std::atomic<ncclResult_t> blockedResult{ncclSuccess};
  // Rank 0 enters an all-reduce that ranks 1 and 2 never join: only revoke can end it.
  std::thread blocked([&] {
    std::vector<float> v(1 << 20, 1.0f);
    blockedResult = ncclAllReduce(v.data(), v.data(), v.size(), ncclFloat, ncclSum, comms[0], nullptr);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const auto start = Clock::now();
  EXPECT_EQ(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT), ncclSuccess) << ncclGetLastError(comms[0]);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  blocked.join();
  EXPECT_NE(blockedResult.load(), ncclSuccess);
  ncclResult_t async = ncclInternalError;
  EXPECT_EQ(ncclCommGetAsyncError(comms[0], &async), ncclSuccess);
  EXPECT_EQ(async, ncclSuccess);
  // Every rank revokes, then the survivors (all of them here) rebuild and compute correctly.
  runRanks(3, [&](int r) {
    EXPECT_EQ(ncclCommRevoke(comms[r], NCCL_REVOKE_DEFAULT), ncclSuccess);
    ncclComm_t child = nullptr;
    int exclude[] = {2};
    if (r == 2) {
      EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
      return;
    }
    ASSERT_EQ(ncclCommShrink(comms[r], exclude, 1, &child, nullptr, NCCL_SHRINK_DEFAULT), ncclSuccess)
        << ncclGetLastError(comms[r]);
    int me = -1;
    ASSERT_EQ(ncclCommUserRank(child, &me), ncclSuccess);
    EXPECT_EQ(allReduceRankSum(child, me), 3.0f);
    EXPECT_EQ(ncclCommDestroy(child), ncclSuccess);
    EXPECT_EQ(ncclCommDestroy(comms[r]), ncclSuccess);
  });
}

}  // namespace
