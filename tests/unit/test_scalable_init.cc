// ncclCommInitRankScalable: each unique id's root serves one contiguous block of ranks, and ranks
// look up partners of other blocks at those blocks' roots (bootstrap/wire.h). A rank sent to the
// wrong root is refused by it, so a rendezvous that completes proves the blocks were honoured.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "bootstrap/wire.h"
#include "core/comm.h"
#include "nccl.h"

namespace {

void runScalable(int nranks, int nids) {
  std::vector<ncclUniqueId> ids(static_cast<size_t>(nids));
  for (ncclUniqueId& id : ids) ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::vector<ncclResult_t> init(static_cast<size_t>(nranks), ncclInternalError), reduce = init;
  std::vector<float> got(static_cast<size_t>(nranks), 0);
  std::vector<uint64_t> messages(static_cast<size_t>(nranks), 0);
  std::vector<std::thread> ranks;
  for (int r = 0; r < nranks; ++r)
    ranks.emplace_back([&, r] {
      ncclComm_t comm = nullptr;
      init[static_cast<size_t>(r)] = ncclCommInitRankScalable(&comm, nranks, r, nids, ids.data(), nullptr);
      if (init[static_cast<size_t>(r)] != ncclSuccess) return;
      messages[static_cast<size_t>(r)] = comm->bootstrap->messagesSent();
      float x = static_cast<float>(r + 1);
      reduce[static_cast<size_t>(r)] = ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, comm, nullptr);
      got[static_cast<size_t>(r)] = x;
      ncclCommDestroy(comm);
    });
  for (std::thread& t : ranks) t.join();
  int rounds = 0;
  while ((1 << rounds) < nranks) ++rounds;
  for (int r = 0; r < nranks; ++r) {
    EXPECT_EQ(init[static_cast<size_t>(r)], ncclSuccess) << "rank " << r << " of " << nranks << ", " << nids << " ids";
    EXPECT_EQ(reduce[static_cast<size_t>(r)], ncclSuccess) << "rank " << r;
    EXPECT_EQ(got[static_cast<size_t>(r)], static_cast<float>(nranks * (nranks + 1) / 2)) << "rank " << r;
    // One join, a lookup per other root serving a partner, ceil(log2 n) all-gather rounds and as
    // many barrier rounds: logarithmic, never n.
    EXPECT_LE(messages[static_cast<size_t>(r)], static_cast<uint64_t>(1 + std::min(nids - 1, rounds) + 2 * rounds))
        << "rank " << r;
  }
}

TEST(ScalableInit, OneRoot) { runScalable(9, 1); }
TEST(ScalableInit, TwoRoots) { runScalable(9, 2); }
TEST(ScalableInit, ThreeRootsUnevenBlocks) { runScalable(13, 3); }
TEST(ScalableInit, OneRootPerRank) { runScalable(6, 6); }
TEST(ScalableInit, ManyRanksFewRoots) { runScalable(64, 4); }

TEST(ScalableInit, MoreIdsThanRanksIsRefused) {
  std::vector<ncclUniqueId> ids(3);
  for (ncclUniqueId& id : ids) ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRankScalable(&comm, 2, 0, 3, ids.data(), nullptr), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("at most one per rank"), std::string::npos);
}

TEST(ScalableInit, BlocksAreContiguousAndEven) {
  for (int n : {1, 2, 7, 13, 100, 1000})
    for (int k = 1; k <= std::min(n, 9); ++k) {
      int prev = 0;
      for (int r = 0; r < n; ++r) {
        const int root = atl::bootstrap::wire::rootOfRank(r, n, k);
        ASSERT_TRUE(root == prev || root == prev + 1) << n << " ranks, " << k << " roots, rank " << r;
        prev = root;
        ASSERT_GE(r, atl::bootstrap::wire::firstRankOfRoot(root, n, k));
        ASSERT_LT(r, atl::bootstrap::wire::firstRankOfRoot(root + 1, n, k));
      }
      EXPECT_EQ(prev, k - 1);
      const int small = n / k;
      for (int i = 0; i < k; ++i) {
        const int size = atl::bootstrap::wire::firstRankOfRoot(i + 1, n, k) - atl::bootstrap::wire::firstRankOfRoot(i, n, k);
        EXPECT_TRUE(size == small || size == small + 1);
      }
    }
}

}  // namespace
