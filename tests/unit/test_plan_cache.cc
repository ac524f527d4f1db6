// The per-communicator plan cache (core/plan_cache.h) is an LRU: a hit makes a plan the most
// recent, a full cache evicts the least recently used plan the running batch has not taken, and a
// batch that has taken every plan caches nothing more. The last tests drive it through real calls
// on a 1-rank communicator: a working set issued after the cache filled with other shapes must be
// cached (before the LRU, the first 64 shapes stayed forever and every later one was rebuilt).
// The lone-call memo (core/repeat_call.h) is checked there too: a repeat finds the plan without
// the cache, and nothing that changes the plan key, or frees the plan, is missed.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "base/params.h"
#include "core/comm.h"
#include "core/plan_cache.h"
#include "nccl.h"
#include "tests/common/saved_env.h"

namespace {

using atl::PlanCache;
using atl::PlanKey;
using atl::engine::Plan;

PlanKey key(size_t count) {
  PlanKey k;
  k.spec.coll = atl::algo::Coll::AllReduce;
  k.spec.count = count;
  k.dtype = ncclFloat;
  return k;
}

// Builds, inserts and releases one batch holding `count`'s plan; true when it was cached.
bool runOne(PlanCache& cache, size_t count, size_t capacity) {
  Plan* got = cache.acquire(key(count));
  if (got == nullptr) {
    auto plan = std::make_unique<Plan>();
    got = cache.insert(key(count), plan, capacity);
  }
  cache.releaseAll();
  return got != nullptr;
}

bool cached(PlanCache& cache, size_t count) {
  const bool hit = cache.acquire(key(count)) != nullptr;
  cache.releaseAll();
  return hit;
}

TEST(PlanCache, HitMakesMostRecentAndFullCacheEvictsLeastRecent) {
  PlanCache cache;
  for (size_t c : {1, 2, 3}) ASSERT_TRUE(runOne(cache, c, 3));
  EXPECT_TRUE(cached(cache, 1));  // order now (most recent first): 1 3 2
  ASSERT_TRUE(runOne(cache, 4, 3));  // evicts 2
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_FALSE(cached(cache, 2));
  EXPECT_TRUE(cached(cache, 1));
  EXPECT_TRUE(cached(cache, 3));
  EXPECT_TRUE(cached(cache, 4));
  EXPECT_EQ(cache.stats().evictions, 1u);
}

// The entry found last is looked at before the map (PlanCache::recent_): it must be forgotten
// with the entry (ASan reports the dangling pointer otherwise) and never hand out a taken plan.
TEST(PlanCache, TheLastFoundPlanIsForgottenWhenEvictedOrCleared) {
  PlanCache cache;
  ASSERT_TRUE(runOne(cache, 1, 1));
  EXPECT_TRUE(cached(cache, 1));
  ASSERT_TRUE(runOne(cache, 2, 1));  // evicts 1, the last found
  EXPECT_FALSE(cached(cache, 1));
  EXPECT_TRUE(cached(cache, 2));
  EXPECT_EQ(cache.stats().evictions, 1u);
  cache.clear();
  EXPECT_FALSE(cached(cache, 2));
  ASSERT_TRUE(runOne(cache, 3, 4));
  ASSERT_NE(cache.acquire(key(3)), nullptr);
  EXPECT_EQ(cache.acquire(key(3)), nullptr);  // taken by this batch already
  cache.releaseAll();
}

TEST(PlanCache, HitAndMissCounts) {
  PlanCache cache;
  for (int round = 0; round < 3; ++round)
    for (size_t c : {10, 20}) runOne(cache, c, 8);
  EXPECT_EQ(cache.stats().misses, 2u);  // the first round builds
  EXPECT_EQ(cache.stats().hits, 4u);
  EXPECT_EQ(cache.stats().evictions, 0u);
  // A plan the batch already took is a miss for a second identical call in the same batch.
  ASSERT_NE(cache.acquire(key(10)), nullptr);
  EXPECT_EQ(cache.acquire(key(10)), nullptr);
  cache.releaseAll();
  EXPECT_EQ(cache.stats().hits, 5u);
  EXPECT_EQ(cache.stats().misses, 3u);
}

TEST(PlanCache, PlansTakenByTheBatchAreNeverEvicted) {
  PlanCache cache;
  for (size_t c : {1, 2, 3}) ASSERT_TRUE(runOne(cache, c, 3));  // LRU order: 3 2 1
  // One batch (a group) takes 1 and 2, the two least recent; inserting 4 must evict 3.
  Plan* one = cache.acquire(key(1));
  Plan* two = cache.acquire(key(2));
  ASSERT_NE(one, nullptr);
  ASSERT_NE(two, nullptr);
  auto four = std::make_unique<Plan>();
  Plan* fourCached = cache.insert(key(4), four, 3);
  ASSERT_NE(fourCached, nullptr);
  // Now all three cached plans are taken: a fifth shape is not cached and stays with the caller.
  auto five = std::make_unique<Plan>();
  EXPECT_EQ(cache.insert(key(5), five, 3), nullptr);
  EXPECT_NE(five, nullptr);
  EXPECT_EQ(cache.size(), 3u);
  cache.releaseAll();
  EXPECT_FALSE(cached(cache, 3));
  EXPECT_FALSE(cached(cache, 5));
  for (size_t c : {1, 2, 4}) EXPECT_TRUE(cached(cache, c));
}

TEST(PlanCache, ReleaseOrdersTheBatchMostRecentLast) {
  PlanCache cache;
  for (size_t c : {1, 2, 3}) ASSERT_TRUE(runOne(cache, c, 3));
  // One batch takes 3, then 1: afterwards 1 is the most recent, then 3, and 2 is the next victim.
  ASSERT_NE(cache.acquire(key(3)), nullptr);
  ASSERT_NE(cache.acquire(key(1)), nullptr);
  cache.releaseAll();
  ASSERT_TRUE(runOne(cache, 4, 3));
  EXPECT_FALSE(cached(cache, 2));
  ASSERT_TRUE(runOne(cache, 5, 3));  // order was 4 1 3 (cached(2) missed): evicts 3
  EXPECT_FALSE(cached(cache, 3));
  EXPECT_TRUE(cached(cache, 1));
}

// A batch's first plan, when it is the most recent already, stays in the eviction order while
// taken (PlanCache::frontTaken_): still never evicted, and the batch's order is kept on release.
TEST(PlanCache, TheMostRecentPlanTakenInPlaceIsNeitherEvictedNorReordered) {
  PlanCache cache;
  ASSERT_TRUE(runOne(cache, 1, 1));
  ASSERT_NE(cache.acquire(key(1)), nullptr);  // the front, taken in place
  auto two = std::make_unique<Plan>();
  EXPECT_EQ(cache.insert(key(2), two, 1), nullptr);  // full, and the only plan is taken
  EXPECT_EQ(cache.acquire(key(1)), nullptr);
  cache.releaseAll();
  EXPECT_EQ(cache.stats().evictions, 0u);
  EXPECT_TRUE(cached(cache, 1));

  PlanCache three;
  for (size_t c : {1, 2, 3}) ASSERT_TRUE(runOne(three, c, 3));  // order: 3 2 1
  // 2 first (moved out), then 3 (the front, but not the batch's first): 3 ends most recent.
  ASSERT_NE(three.acquire(key(2)), nullptr);
  ASSERT_NE(three.acquire(key(3)), nullptr);
  three.releaseAll();  // 3 2 1
  ASSERT_TRUE(runOne(three, 4, 3));  // evicts 1
  EXPECT_FALSE(cached(three, 1));
  ASSERT_TRUE(runOne(three, 5, 3));  // order was 4 3 2 (cached(1) missed): evicts 2
  EXPECT_FALSE(cached(three, 2));
  EXPECT_TRUE(cached(three, 3));
  // 3 first (the front, taken in place), then 4: 4 ends most recent, 3 next.
  ASSERT_NE(three.acquire(key(3)), nullptr);
  ASSERT_NE(three.acquire(key(4)), nullptr);
  three.releaseAll();  // 4 3 5
  ASSERT_TRUE(runOne(three, 6, 3));  // evicts 5
  EXPECT_FALSE(cached(three, 5));
  EXPECT_TRUE(cached(three, 3));
  EXPECT_TRUE(cached(three, 4));
}

TEST(PlanCache, ZeroOrLoweredCapacity) {
  PlanCache cache;
  EXPECT_FALSE(runOne(cache, 1, 0));
  EXPECT_EQ(cache.size(), 0u);
  for (size_t c : {1, 2, 3, 4}) ASSERT_TRUE(runOne(cache, c, 4));
  ASSERT_TRUE(runOne(cache, 5, 2));  // capacity lowered to 2: evicts down to one, then inserts
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(cached(cache, 5));
  EXPECT_TRUE(cached(cache, 4));
}

// Real calls: 1-rank communicator, ATOLL_PLAN_CACHE_SIZE=8.
class PlanCacheCalls : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.save({"ATOLL_PLAN_CACHE_SIZE"});
    setenv("ATOLL_PLAN_CACHE_SIZE", "8", 1);
    atl::params::reloadForTesting();
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    ASSERT_EQ(ncclCommInitRank(&comm_, 1, id, 0), ncclSuccess);
  }
  void TearDown() override {
    if (comm_ != nullptr) {
      EXPECT_EQ(ncclCommDestroy(comm_), ncclSuccess);
    }
    env_.restore();
    atl::params::reloadForTesting();
  }
  void call(size_t count) {
    ASSERT_EQ(ncclAllReduce(buf_.data(), buf_.data(), count, ncclFloat, ncclSum, comm_, nullptr), ncclSuccess);
  }
  const PlanCache::Stats& stats() const { return comm_->plans.stats(); }
  // The call as validated (the memo compares validated fields).
  atl::OpDesc op(const void* send, void* recv, size_t count) const {
    atl::OpDesc d;
    d.comm = comm_;
    d.sendbuff = send;
    d.recvbuff = recv;
    d.count = count;
    d.dtype = ncclFloat;
    d.rawDtype = ncclFloat;
    return d;
  }

  atl::test::SavedEnv env_;
  ncclComm_t comm_ = nullptr;
  std::vector<float> buf_ = std::vector<float>(1024, 1.0f);
};

TEST_F(PlanCacheCalls, WorkingSetAfterOtherShapesIsCached) {
  for (size_t c = 1; c <= 8; ++c) call(c);  // fills the cache with shapes that are never used again
  ASSERT_EQ(comm_->plans.size(), 8u);
  const PlanCache::Stats before = stats();
  for (int round = 0; round < 3; ++round)
    for (size_t c = 101; c <= 106; ++c) call(c);
  EXPECT_EQ(stats().misses - before.misses, 6u);  // only the first round builds
  EXPECT_EQ(stats().hits - before.hits, 12u);
  EXPECT_EQ(stats().evictions - before.evictions, 6u);
}

TEST_F(PlanCacheCalls, GroupedCallsKeepTheirPlans) {
  // One group of 10 distinct shapes against a capacity of 8: the group takes every cached plan, so
  // the last two are built and freed with the batch, and nothing it took is evicted under it.
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (size_t c = 1; c <= 10; ++c) call(c);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  }
  EXPECT_EQ(comm_->plans.size(), 8u);
  EXPECT_EQ(stats().evictions, 0u);
  EXPECT_EQ(stats().hits, 8u);  // the second round reuses the 8 the first one cached
  EXPECT_EQ(stats().misses, 12u);
  for (float v : buf_) EXPECT_EQ(v, 1.0f);  // one rank: sums are copies
}

TEST_F(PlanCacheCalls, ALoneCallRepeatedRunsTheRememberedPlanOnNewBuffers) {
  std::vector<float> in(64), out(64);
  call(64);
  atl::engine::Plan* plan = comm_->repeat.find(op(buf_.data(), buf_.data(), 64));
  ASSERT_NE(plan, nullptr);
  EXPECT_EQ(comm_->repeat.find(op(buf_.data(), buf_.data(), 63)), nullptr);  // another count
  EXPECT_EQ(comm_->repeat.find(op(in.data(), out.data(), 64)), nullptr);     // out of place: another key
  const PlanCache::Stats before = stats();
  for (int i = 0; i < 3; ++i) call(64);
  EXPECT_EQ(stats().hits - before.hits, 3u);  // counted though the cache was not searched
  EXPECT_EQ(stats().misses, before.misses);
  ASSERT_TRUE(atl::lastCall(comm_).has_value());
  EXPECT_TRUE(atl::lastCall(comm_)->fromCache);
  // Out of place, each call with buffers of its own: one build, then the remembered plan bound
  // to each call's buffers (one rank: the output is a copy of the input).
  for (int round = 0; round < 3; ++round) {
    std::vector<float> src(64, static_cast<float>(round + 2)), dst(64, 0.0f);
    ASSERT_EQ(ncclAllReduce(src.data(), dst.data(), 64, ncclFloat, ncclSum, comm_, nullptr), ncclSuccess);
    for (float v : dst) ASSERT_EQ(v, static_cast<float>(round + 2));
    EXPECT_NE(comm_->repeat.find(op(src.data(), dst.data(), 64)), nullptr);
  }
  EXPECT_EQ(stats().misses - before.misses, 1u);
}

TEST_F(PlanCacheCalls, TheRememberedPlanIsDroppedWithTheCacheOrTheParameters) {
  call(64);
  ASSERT_NE(comm_->repeat.find(op(buf_.data(), buf_.data(), 64)), nullptr);
  comm_->plans.clear();  // what ncclCommSuspend(NCCL_SUSPEND_MEM) does: the plan is freed
  EXPECT_EQ(comm_->repeat.find(op(buf_.data(), buf_.data(), 64)), nullptr);
  call(64);
  ASSERT_NE(comm_->repeat.find(op(buf_.data(), buf_.data(), 64)), nullptr);
  // New parameters may give another key (the chunk size is in it): the next call plans again.
  env_.save({"ATOLL_CHUNK_BYTES"});
  setenv("ATOLL_CHUNK_BYTES", "4096", 1);
  atl::params::reloadForTesting();
  EXPECT_EQ(comm_->repeat.find(op(buf_.data(), buf_.data(), 64)), nullptr);
  const uint64_t misses = stats().misses;
  call(64);
  EXPECT_EQ(stats().misses - misses, 1u);
  EXPECT_NE(comm_->repeat.find(op(buf_.data(), buf_.data(), 64)), nullptr);
  // A group that caches other shapes, in a cache of two, evicts the remembered plan.
  setenv("ATOLL_PLAN_CACHE_SIZE", "2", 1);
  atl::params::reloadForTesting();
  call(64);
  ASSERT_NE(comm_->repeat.find(op(buf_.data(), buf_.data(), 64)), nullptr);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  call(32);
  call(16);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(comm_->repeat.find(op(buf_.data(), buf_.data(), 64)), nullptr);
  call(64);
  for (float v : buf_) EXPECT_EQ(v, 1.0f);
}

TEST_F(PlanCacheCalls, NothingIsRememberedWithoutACacheOrInsideALargerGroup) {
  setenv("ATOLL_PLAN_CACHE_SIZE", "0", 1);
  atl::params::reloadForTesting();
  call(64);
  call(64);
  EXPECT_EQ(comm_->repeat.find(op(buf_.data(), buf_.data(), 64)), nullptr);
  EXPECT_EQ(stats().hits, 0u);
  setenv("ATOLL_PLAN_CACHE_SIZE", "8", 1);
  atl::params::reloadForTesting();
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  call(64);
  call(64);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(comm_->repeat.find(op(buf_.data(), buf_.data(), 64)), nullptr);
}

}  // namespace
