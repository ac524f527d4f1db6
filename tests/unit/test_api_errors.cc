// Bad-input behaviour of the public API: every case asserts the exact ncclResult_t and that
// ncclGetLastError explains it. Uses only the public header (links the shared `atoll`).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "nccl.h"

namespace {

bool hasLastError(ncclComm_t comm) {
  const char* s = ncclGetLastError(comm);
  return s != nullptr && s[0] != '\0';
}

#define EXPECT_NCCL_ERR(code, comm, call)                                                         \
  do {                                                                                            \
    ncclResult_t rc_ = (call);                                                                    \
    EXPECT_EQ(rc_, (code)) << #call << " -> " << ncclGetErrorString(rc_);                         \
    EXPECT_TRUE(hasLastError(comm)) << #call << ": ncclGetLastError is empty";                   \
  } while (0)

#define ASSERT_NCCL_OK(call)                                                                           \
  do {                                                                                                 \
    ncclResult_t rc_ = (call);                                                                         \
    ASSERT_EQ(rc_, ncclSuccess) << #call << " -> " << ncclGetErrorString(rc_) << ": " << ncclGetLastError(nullptr); \
  } while (0)

// Runs `fn` on its own thread and fails (then exits: the stuck thread cannot be joined) if it
// does not return within `seconds`; a hang must fail fast, not stall ctest.
template <typename Fn>
void runWithTimeout(double seconds, const char* what, Fn fn) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  std::thread t([fn, done]() mutable {
    fn();
    done->store(true);
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!done->load() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  if (!done->load()) {
    std::fprintf(stderr, "FATAL: %s did not return within %.0f s (hang)\n", what, seconds);
    std::fflush(stderr);
    std::_Exit(1);
  }
  t.join();
}

// One 1-rank comm for the whole suite (cheap), plus a 2-rank pair for the nranks-scaled overflow.
class ApiErrors : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(ncclCommInitAll(&comm_, 1, nullptr), ncclSuccess);
    ASSERT_EQ(ncclCommInitAll(pair_, 2, nullptr), ncclSuccess);
  }
  static void TearDownTestSuite() {
    if (comm_) {
      EXPECT_EQ(ncclCommDestroy(comm_), ncclSuccess);
    }
    if (pair_[0]) {
      EXPECT_EQ(ncclGroupStart(), ncclSuccess);
      for (ncclComm_t c : pair_) EXPECT_EQ(ncclCommFinalize(c), ncclSuccess);
      EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
      for (ncclComm_t c : pair_) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
    }
    comm_ = nullptr;
    pair_[0] = pair_[1] = nullptr;
  }
  static ncclComm_t comm_;
  static ncclComm_t pair_[2];
  float a_[64] = {};
  float b_[64] = {};
};
ncclComm_t ApiErrors::comm_ = nullptr;
ncclComm_t ApiErrors::pair_[2] = {nullptr, nullptr};

TEST_F(ApiErrors, NullBuffersWithCount) {
  ncclComm_t c = comm_;
  const ncclResult_t E = ncclInvalidArgument;
  EXPECT_NCCL_ERR(E, c, ncclAllReduce(nullptr, b_, 4, ncclFloat, ncclSum, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclAllReduce(a_, nullptr, 4, ncclFloat, ncclSum, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclBroadcast(nullptr, b_, 4, ncclFloat, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclBroadcast(a_, nullptr, 4, ncclFloat, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclBcast(nullptr, 4, ncclFloat, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclReduce(nullptr, b_, 4, ncclFloat, ncclSum, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclReduce(a_, nullptr, 4, ncclFloat, ncclSum, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclAllGather(nullptr, b_, 4, ncclFloat, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclAllGather(a_, nullptr, 4, ncclFloat, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclReduceScatter(nullptr, b_, 4, ncclFloat, ncclSum, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclReduceScatter(a_, nullptr, 4, ncclFloat, ncclSum, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclAlltoAll(nullptr, b_, 4, ncclFloat, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclAlltoAll(a_, nullptr, 4, ncclFloat, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclGather(nullptr, b_, 4, ncclFloat, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclGather(a_, nullptr, 4, ncclFloat, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclScatter(nullptr, b_, 4, ncclFloat, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclScatter(a_, nullptr, 4, ncclFloat, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclSend(nullptr, 4, ncclFloat, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclRecv(nullptr, 4, ncclFloat, 0, c, nullptr));
}

TEST_F(ApiErrors, CountOverflow) {
  ncclComm_t c = comm_;
  const ncclResult_t E = ncclInvalidArgument;
  const size_t huge = SIZE_MAX;  // SIZE_MAX * 4 bytes overflows size_t
  EXPECT_NCCL_ERR(E, c, ncclAllReduce(a_, b_, huge, ncclInt32, ncclSum, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclBroadcast(a_, b_, huge, ncclInt32, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclReduce(a_, b_, huge, ncclInt32, ncclSum, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclAllGather(a_, b_, huge, ncclInt32, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclReduceScatter(a_, b_, huge, ncclInt32, ncclSum, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclAlltoAll(a_, b_, huge, ncclInt32, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclSend(a_, huge, ncclInt32, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclRecv(b_, huge, ncclInt32, 0, c, nullptr));
  EXPECT_NCCL_ERR(E, c, ncclAllReduce(a_, b_, SIZE_MAX / 4 + 1, ncclInt32, ncclSum, c, nullptr));
}

TEST_F(ApiErrors, CountOverflowScaledByRanks) {
  // count * 4 fits in size_t, nranks(2) * count * 4 does not: the check must include nranks.
  const size_t count = SIZE_MAX / 6;
  ASSERT_LT(count, SIZE_MAX / 4);
  for (ncclComm_t c : pair_) {
    EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclAllGather(a_, b_, count, ncclInt32, c, nullptr));
    EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclReduceScatter(a_, b_, count, ncclInt32, ncclSum, c, nullptr));
    EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclAlltoAll(a_, b_, count, ncclInt32, c, nullptr));
    EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclGather(a_, b_, count, ncclInt32, 0, c, nullptr));
    EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclScatter(a_, b_, count, ncclInt32, 0, c, nullptr));
  }
}

void expectBadDatatype(ncclComm_t c, float* a, float* b, ncclDataType_t dt) {
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclAllReduce(a, b, 1, dt, ncclSum, c, nullptr));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclBroadcast(a, b, 1, dt, 0, c, nullptr));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclReduce(a, b, 1, dt, ncclSum, 0, c, nullptr));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclAllGather(a, b, 1, dt, c, nullptr));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclReduceScatter(a, b, 1, dt, ncclSum, c, nullptr));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclAlltoAll(a, b, 1, dt, c, nullptr));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclSend(a, 1, dt, 0, c, nullptr));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclRecv(b, 1, dt, 0, c, nullptr));
}

TEST_F(ApiErrors, InvalidDatatype) {
  for (int bad : {12, 15}) {  // inside the enum's value range, outside the defined types
    SCOPED_TRACE(bad);
    expectBadDatatype(comm_, a_, b_, static_cast<ncclDataType_t>(bad));
  }
}

// Values a C caller can pass (C enums are plain ints) but C++ cannot represent in the enum type:
// the library must validate them without undefined behaviour (UBSan's enum check catches a
// plain load of the parameter).
extern "C" int atollTestBadDatatypeCalls(ncclComm_t c, float* a, float* b, int raw, ncclResult_t* out);
extern "C" int atollTestBadOpCalls(ncclComm_t c, float* a, float* b, int raw, ncclResult_t* out);
extern "C" const char* atollTestErrorStringOf(int raw);

TEST_F(ApiErrors, InvalidDatatypeFromC) {
  for (int bad : {-1, 1000}) {
    SCOPED_TRACE(bad);
    ncclResult_t results[16];
    int n = atollTestBadDatatypeCalls(comm_, a_, b_, bad, results);
    for (int i = 0; i < n; ++i) EXPECT_EQ(results[i], ncclInvalidArgument) << "call " << i;
    EXPECT_TRUE(hasLastError(comm_));
  }
}

void expectBadOp(ncclComm_t c, float* a, float* b, ncclRedOp_t op) {
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclAllReduce(a, b, 1, ncclFloat, op, c, nullptr));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclReduce(a, b, 1, ncclFloat, op, 0, c, nullptr));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclReduceScatter(a, b, 1, ncclFloat, op, c, nullptr));
}

TEST_F(ApiErrors, InvalidOp) {
  ncclComm_t c = comm_;
  for (int bad : {5, 99}) {  // 5 == ncclNumOps: the first user op id, never created here
    SCOPED_TRACE(bad);
    expectBadOp(c, a_, b_, static_cast<ncclRedOp_t>(bad));
  }
  // Built-in operators cannot be destroyed.
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclRedOpDestroy(ncclSum, c));
}

TEST_F(ApiErrors, InvalidOpFromC) {  // see InvalidDatatypeFromC
  for (int bad : {-1, -1000}) {
    SCOPED_TRACE(bad);
    ncclResult_t results[8];
    int n = atollTestBadOpCalls(comm_, a_, b_, bad, results);
    for (int i = 0; i < n; ++i) EXPECT_EQ(results[i], ncclInvalidArgument) << "call " << i;
    EXPECT_TRUE(hasLastError(comm_));
  }
  EXPECT_STREQ(atollTestErrorStringOf(-5), "unknown result code");
}

TEST_F(ApiErrors, PreMulSumOpLifetime) {
  ncclComm_t c = comm_;
  float scalar = 2.0f;
  ncclRedOp_t op;
  ASSERT_NCCL_OK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat, ncclScalarHostImmediate, c));
  a_[0] = 3.0f;
  ASSERT_NCCL_OK(ncclAllReduce(a_, b_, 1, ncclFloat, op, c, nullptr));
  EXPECT_EQ(b_[0], 6.0f);
  ASSERT_NCCL_OK(ncclRedOpDestroy(op, c));
  // A destroyed op is as invalid as one never created.
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclAllReduce(a_, b_, 1, ncclFloat, op, c, nullptr));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c,
                  ncclRedOpCreatePreMulSum(&op, &scalar, static_cast<ncclDataType_t>(12), ncclScalarHostImmediate, c));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclRedOpCreatePreMulSum(&op, nullptr, ncclFloat, ncclScalarHostImmediate, c));
}

TEST_F(ApiErrors, InvalidRoot) {
  ncclComm_t c = comm_;
  for (int root : {-1, 1, 1 << 30}) {  // the comm has 1 rank
    SCOPED_TRACE(root);
    EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclBroadcast(a_, b_, 1, ncclFloat, root, c, nullptr));
    EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclBcast(a_, 1, ncclFloat, root, c, nullptr));
    EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclReduce(a_, b_, 1, ncclFloat, ncclSum, root, c, nullptr));
    EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclGather(a_, b_, 1, ncclFloat, root, c, nullptr));
    EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclScatter(a_, b_, 1, ncclFloat, root, c, nullptr));
  }
  for (ncclComm_t p : pair_) {
    EXPECT_NCCL_ERR(ncclInvalidArgument, p, ncclBroadcast(a_, b_, 1, ncclFloat, 2, p, nullptr));
    EXPECT_NCCL_ERR(ncclInvalidArgument, p, ncclReduce(a_, b_, 1, ncclFloat, ncclSum, -1, p, nullptr));
  }
}

TEST_F(ApiErrors, InvalidPeer) {
  ncclComm_t c = comm_;
  for (int peer : {-1, 1, 7}) {
    SCOPED_TRACE(peer);
    EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclSend(a_, 1, ncclFloat, peer, c, nullptr));
    EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclRecv(b_, 1, ncclFloat, peer, c, nullptr));
  }
}

TEST_F(ApiErrors, NullComm) {
  const ncclResult_t E = ncclInvalidArgument;
  ncclComm_t n = nullptr;
  EXPECT_NCCL_ERR(E, n, ncclAllReduce(a_, b_, 1, ncclFloat, ncclSum, n, nullptr));
  EXPECT_NCCL_ERR(E, n, ncclBroadcast(a_, b_, 1, ncclFloat, 0, n, nullptr));
  EXPECT_NCCL_ERR(E, n, ncclBcast(a_, 1, ncclFloat, 0, n, nullptr));
  EXPECT_NCCL_ERR(E, n, ncclReduce(a_, b_, 1, ncclFloat, ncclSum, 0, n, nullptr));
  EXPECT_NCCL_ERR(E, n, ncclAllGather(a_, b_, 1, ncclFloat, n, nullptr));
  EXPECT_NCCL_ERR(E, n, ncclReduceScatter(a_, b_, 1, ncclFloat, ncclSum, n, nullptr));
  EXPECT_NCCL_ERR(E, n, ncclAlltoAll(a_, b_, 1, ncclFloat, n, nullptr));
  EXPECT_NCCL_ERR(E, n, ncclGather(a_, b_, 1, ncclFloat, 0, n, nullptr));
  EXPECT_NCCL_ERR(E, n, ncclScatter(a_, b_, 1, ncclFloat, 0, n, nullptr));
  EXPECT_NCCL_ERR(E, n, ncclSend(a_, 1, ncclFloat, 0, n, nullptr));
  EXPECT_NCCL_ERR(E, n, ncclRecv(b_, 1, ncclFloat, 0, n, nullptr));
  int v = 0;
  EXPECT_NCCL_ERR(E, n, ncclCommCount(n, &v));
  EXPECT_NCCL_ERR(E, n, ncclCommUserRank(n, &v));
  EXPECT_NCCL_ERR(E, n, ncclCommCuDevice(n, &v));
  ncclResult_t async;
  EXPECT_NCCL_ERR(E, n, ncclCommGetAsyncError(n, &async));
  ncclComm_t child = nullptr;
  EXPECT_NCCL_ERR(E, n, ncclCommSplit(n, 0, 0, &child, nullptr));
  // Null output pointers.
  EXPECT_NCCL_ERR(E, comm_, ncclCommCount(comm_, nullptr));
  EXPECT_NCCL_ERR(E, comm_, ncclCommUserRank(comm_, nullptr));
  EXPECT_NCCL_ERR(E, n, ncclGetVersion(nullptr));
  EXPECT_NCCL_ERR(E, n, ncclGetUniqueId(nullptr));
}

TEST_F(ApiErrors, UseAfterDestroy) {
  ncclComm_t c = nullptr;
  ASSERT_NCCL_OK(ncclCommInitAll(&c, 1, nullptr));
  // A call first, so this thread remembers the communicator as live (core/comm_registry.cc):
  // the destroy must void that.
  ASSERT_NCCL_OK(ncclAllReduce(a_, b_, 1, ncclFloat, ncclSum, c, nullptr));
  ASSERT_NCCL_OK(ncclCommDestroy(c));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclAllReduce(a_, b_, 1, ncclFloat, ncclSum, c, nullptr));
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclBroadcast(a_, b_, 1, ncclFloat, 0, c, nullptr));
  int v = 0;
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclCommCount(c, &v));
}

TEST(ApiInit, RankOutOfRangeAndBadNranks) {
  ncclUniqueId id;
  ASSERT_NCCL_OK(ncclGetUniqueId(&id));
  runWithTimeout(20, "bad-rank init", [id] {
    ncclComm_t c = nullptr;
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitRank(&c, 2, id, 2));
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitRank(&c, 2, id, -1));
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitRank(&c, 0, id, 0));
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitRank(&c, -3, id, 0));
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitRank(nullptr, 1, id, 0));
    ncclComm_t comms[2] = {nullptr, nullptr};
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitAll(comms, 0, nullptr));
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitAll(comms, -1, nullptr));
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitAll(nullptr, 1, nullptr));
  });
}

TEST(ApiInit, GarbageUniqueId) {
  ncclUniqueId id;
  std::mt19937 rng(12345);
  for (char& ch : id.internal) ch = static_cast<char>(rng());
  runWithTimeout(30, "init with a garbage id", [id] {
    ncclComm_t c = nullptr;
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitRank(&c, 2, id, 0));
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitRank(&c, 2, id, 1));
  });
  ncclUniqueId zero;
  std::memset(&zero, 0, sizeof zero);
  runWithTimeout(30, "init with an all-zero id", [zero] {
    ncclComm_t c = nullptr;
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitRank(&c, 2, zero, 1));
  });
}

TEST(ApiInit, BadConfig) {
  runWithTimeout(20, "init with a bad config", [] {
    ncclUniqueId id;
    ASSERT_NCCL_OK(ncclGetUniqueId(&id));
    ncclComm_t c = nullptr;
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.magic = 0x12345678;
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitRankConfig(&c, 1, id, 0, &cfg));
    cfg = NCCL_CONFIG_INITIALIZER;
    cfg.size = 0;
    EXPECT_NCCL_ERR(ncclInvalidArgument, nullptr, ncclCommInitRankConfig(&c, 1, id, 0, &cfg));
    // A good config still works with the same id afterwards.
    cfg = NCCL_CONFIG_INITIALIZER;
    ASSERT_NCCL_OK(ncclCommInitRankConfig(&c, 1, id, 0, &cfg));
    ASSERT_NCCL_OK(ncclCommDestroy(c));
  });
}

TEST(ApiGroup, EndWithoutStart) {
  EXPECT_NCCL_ERR(ncclInvalidUsage, nullptr, ncclGroupEnd());
  // Balanced groups still work afterwards.
  ASSERT_NCCL_OK(ncclGroupStart());
  ASSERT_NCCL_OK(ncclGroupEnd());
  EXPECT_NCCL_ERR(ncclInvalidUsage, nullptr, ncclGroupEnd());
}

TEST(ApiInit, MismatchedNranks) {
  ncclUniqueId id;
  ASSERT_NCCL_OK(ncclGetUniqueId(&id));
  ncclResult_t rc[2] = {ncclSuccess, ncclSuccess};
  bool hasMsg[2] = {false, false};
  ncclComm_t comms[2] = {nullptr, nullptr};
  const auto start = std::chrono::steady_clock::now();
  runWithTimeout(30, "mismatched nranks init", [&] {
    std::thread t0([&] {
      rc[0] = ncclCommInitRank(&comms[0], 2, id, 0);
      hasMsg[0] = hasLastError(nullptr);
    });
    std::thread t1([&] {
      rc[1] = ncclCommInitRank(&comms[1], 3, id, 1);
      hasMsg[1] = hasLastError(nullptr);
    });
    t0.join();
    t1.join();
  });
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(rc[0], ncclInvalidUsage) << ncclGetErrorString(rc[0]);
  EXPECT_EQ(rc[1], ncclInvalidUsage) << ncclGetErrorString(rc[1]);
  EXPECT_TRUE(hasMsg[0]);
  EXPECT_TRUE(hasMsg[1]);
  EXPECT_LT(secs, 10.0) << "mismatch should be detected at rendezvous, not by a timeout";
  for (ncclComm_t c : comms)
    if (c) ncclCommAbort(c);
}

TEST(ApiMisc, ErrorStrings) {
  std::set<std::string> seen;
  for (int r = ncclSuccess; r < ncclNumResults; ++r) {
    const char* s = ncclGetErrorString(static_cast<ncclResult_t>(r));
    ASSERT_NE(s, nullptr) << r;
    EXPECT_GT(std::strlen(s), 0u) << r;
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(ncclNumResults)) << "error strings should be distinct";
  const char* unknown = ncclGetErrorString(static_cast<ncclResult_t>(1234));
  ASSERT_NE(unknown, nullptr);
  EXPECT_GT(std::strlen(unknown), 0u);
}

TEST(ApiMisc, Version) {
  int v = 0;
  ASSERT_NCCL_OK(ncclGetVersion(&v));
  EXPECT_EQ(v, 23007);
  EXPECT_EQ(v, NCCL_VERSION_CODE);
  EXPECT_EQ(NCCL_VERSION(2, 30, 7), 23007);
  int pv = 0;
  ASSERT_NCCL_OK(pncclGetVersion(&pv));
  EXPECT_EQ(pv, v);
}

// Every collective on a 1-rank comm succeeds for count 0 (null buffers allowed) and count 1.
TEST_F(ApiErrors, OneRankEveryCollective) {
  ncclComm_t c = comm_;
  for (size_t count : {size_t{0}, size_t{1}}) {
    SCOPED_TRACE(count);
    float* s = count ? a_ : nullptr;
    float* r = count ? b_ : nullptr;
    auto reset = [&] {
      a_[0] = 5.0f;
      b_[0] = -1.0f;
    };
    auto expectCopied = [&](const char* what) {
      if (count) {
        EXPECT_EQ(b_[0], 5.0f) << what;
      }
    };
    reset();
    ASSERT_NCCL_OK(ncclAllReduce(s, r, count, ncclFloat, ncclSum, c, nullptr));
    expectCopied("allreduce");
    reset();
    ASSERT_NCCL_OK(ncclAllReduce(s, r, count, ncclFloat, ncclAvg, c, nullptr));
    expectCopied("allreduce avg");
    reset();
    ASSERT_NCCL_OK(ncclBroadcast(s, r, count, ncclFloat, 0, c, nullptr));
    expectCopied("broadcast");
    reset();
    ASSERT_NCCL_OK(ncclBcast(s, count, ncclFloat, 0, c, nullptr));
    if (count) {
      EXPECT_EQ(a_[0], 5.0f);
    }
    reset();
    ASSERT_NCCL_OK(ncclReduce(s, r, count, ncclFloat, ncclMax, 0, c, nullptr));
    expectCopied("reduce");
    reset();
    ASSERT_NCCL_OK(ncclAllGather(s, r, count, ncclFloat, c, nullptr));
    expectCopied("allgather");
    reset();
    ASSERT_NCCL_OK(ncclReduceScatter(s, r, count, ncclFloat, ncclProd, c, nullptr));
    expectCopied("reducescatter");
    reset();
    ASSERT_NCCL_OK(ncclAlltoAll(s, r, count, ncclFloat, c, nullptr));
    expectCopied("alltoall");
    reset();
    ASSERT_NCCL_OK(ncclGather(s, r, count, ncclFloat, 0, c, nullptr));
    expectCopied("gather");
    reset();
    ASSERT_NCCL_OK(ncclScatter(s, r, count, ncclFloat, 0, c, nullptr));
    expectCopied("scatter");
    reset();
    ASSERT_NCCL_OK(ncclGroupStart());
    ASSERT_NCCL_OK(ncclSend(s, count, ncclFloat, 0, c, nullptr));
    ASSERT_NCCL_OK(ncclRecv(r, count, ncclFloat, 0, c, nullptr));
    ASSERT_NCCL_OK(ncclGroupEnd());
    expectCopied("send/recv to self");
  }
  ncclResult_t async = ncclInternalError;
  ASSERT_NCCL_OK(ncclCommGetAsyncError(c, &async));
  EXPECT_EQ(async, ncclSuccess);
}

// Errors must leave the comm usable.
TEST_F(ApiErrors, CommUsableAfterErrors) {
  ncclComm_t c = comm_;
  EXPECT_NCCL_ERR(ncclInvalidArgument, c, ncclAllReduce(nullptr, b_, 4, ncclFloat, ncclSum, c, nullptr));
  for (int i = 0; i < 8; ++i) a_[i] = static_cast<float>(i);
  ASSERT_NCCL_OK(ncclAllReduce(a_, b_, 8, ncclFloat, ncclSum, c, nullptr));
  for (int i = 0; i < 8; ++i) EXPECT_EQ(b_[i], static_cast<float>(i));
  // The 2-rank pair (one thread, so grouped) also still works.
  float x[2][4], y[2][4];
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 4; ++i) x[r][i] = static_cast<float>(r + i);
  ASSERT_NCCL_OK(ncclGroupStart());
  for (int r = 0; r < 2; ++r) ASSERT_NCCL_OK(ncclAllReduce(x[r], y[r], 4, ncclFloat, ncclSum, pair_[r], nullptr));
  ASSERT_NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 4; ++i) EXPECT_EQ(y[r][i], static_cast<float>(1 + 2 * i));
}

}  // namespace
