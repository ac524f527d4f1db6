// The entry points NCCL 2.30 added, on the host backend: ncclCommGetUniqueId/ncclCommGrow,
// ncclCommSuspend/Resume/MemStats, windows (ncclWinGetUserPtr), the parameter API, the host side of
// the device API, and the one-sided calls that must fail loudly until they exist. Ranks are threads.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/comm_topology.h"
#include "nccl.h"
#include "tests/common/thread_ranks.h"
#include "tests/common/saved_env.h"

namespace {

using atl::test::allReduceRankSum;
using atl::test::initAll;
using atl::test::runRanks;

void destroyAll(const std::vector<ncclComm_t>& comms) {
  for (ncclComm_t c : comms) EXPECT_EQ(ncclCommDestroy(c), ncclSuccess);
}

bool lastErrorHas(ncclComm_t comm, const char* text) {
  return std::string(ncclGetLastError(comm)).find(text) != std::string::npos;
}

// --- Grow -------------------------------------------------------------------------------------

TEST(Grow, ThreeRanksBecomeFiveAndKeepTheirNumbers) {
  const int oldN = 3, newN = 5;
  auto comms = initAll(oldN);
  ncclUniqueId id;
  const int root = 1;  // any existing rank may be the root
  ASSERT_EQ(ncclCommGetUniqueId(comms[root], &id), ncclSuccess) << ncclGetLastError(comms[root]);
  ncclUniqueId again;
  EXPECT_EQ(ncclCommGetUniqueId(comms[root], &again), ncclInvalidUsage);  // previous id not used yet
  std::vector<ncclComm_t> grown(newN, nullptr);
  runRanks(newN, [&](int r) {
    const size_t i = static_cast<size_t>(r);
    if (r < oldN) {
      ASSERT_EQ(ncclCommGrow(comms[i], newN, r == root ? &id : nullptr, -1, &grown[i], nullptr), ncclSuccess)
          << ncclGetLastError(comms[i]);
    } else {
      ASSERT_EQ(ncclCommGrow(nullptr, newN, &id, r, &grown[i], nullptr), ncclSuccess) << ncclGetLastError(nullptr);
    }
    int n = 0, me = -1;
    EXPECT_EQ(ncclCommCount(grown[i], &n), ncclSuccess);
    EXPECT_EQ(ncclCommUserRank(grown[i], &me), ncclSuccess);
    EXPECT_EQ(n, newN);
    EXPECT_EQ(me, r);
    EXPECT_EQ(allReduceRankSum(grown[i], r), 15.0f);
    if (r < oldN) {
      EXPECT_EQ(allReduceRankSum(comms[i], r), 6.0f);  // the parent still works
    }
  });
  // The id was consumed: the root may make another.
  EXPECT_EQ(ncclCommGetUniqueId(comms[root], &again), ncclSuccess) << ncclGetLastError(comms[root]);
  destroyAll(grown);
  destroyAll(comms);
}

TEST(Grow, EveryExistingRankFailsAloneWhenNoneOrTwoPassAnId) {
  auto comms = initAll(3);
  ncclUniqueId id;
  ASSERT_EQ(ncclCommGetUniqueId(comms[0], &id), ncclSuccess);
  for (int withId : {0, 2}) {
    runRanks(3, [&](int r) {
      ncclComm_t out = nullptr;
      const ncclUniqueId* mine = r < withId ? &id : nullptr;
      EXPECT_EQ(ncclCommGrow(comms[static_cast<size_t>(r)], 4, mine, -1, &out, nullptr), ncclInvalidUsage);
      EXPECT_TRUE(lastErrorHas(nullptr, "exactly one must")) << ncclGetLastError(nullptr);
      EXPECT_EQ(out, nullptr);
    });
  }
  // An id that ncclCommGetUniqueId did not make on this communicator (or made and used) is refused.
  ncclUniqueId foreign;
  ASSERT_EQ(ncclGetUniqueId(&foreign), ncclSuccess);
  runRanks(3, [&](int r) {
    ncclComm_t out = nullptr;
    EXPECT_EQ(ncclCommGrow(comms[static_cast<size_t>(r)], 4, r == 2 ? &foreign : nullptr, -1, &out, nullptr),
              ncclInvalidUsage);
    EXPECT_TRUE(lastErrorHas(nullptr, "not made by ncclCommGetUniqueId")) << ncclGetLastError(nullptr);
  });
  destroyAll(comms);
}

TEST(Grow, BadArguments) {
  auto comms = initAll(2);
  ncclComm_t out = nullptr;
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  EXPECT_EQ(ncclCommGrow(comms[0], 4, nullptr, -1, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommGrow(comms[0], 2, nullptr, -1, &out, nullptr), ncclInvalidArgument);  // must grow
  EXPECT_TRUE(lastErrorHas(nullptr, "must exceed"));
  EXPECT_EQ(ncclCommGrow(comms[0], 4, nullptr, 0, &out, nullptr), ncclInvalidArgument);  // existing: rank -1
  EXPECT_EQ(ncclCommGrow(nullptr, 4, nullptr, 3, &out, nullptr), ncclInvalidArgument);  // new rank needs the id
  EXPECT_EQ(ncclCommGrow(nullptr, 4, &id, 4, &out, nullptr), ncclInvalidArgument);      // out of range
  EXPECT_EQ(ncclCommGetUniqueId(comms[0], nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclCommGetUniqueId(nullptr, &id), ncclInvalidArgument);
  destroyAll(comms);
}

// --- Suspend / Resume / MemStats ----------------------------------------------------------------

uint64_t stat(ncclComm_t c, ncclCommMemStat_t s) {
  uint64_t v = ~0ull;
  EXPECT_EQ(ncclCommMemStats(c, s, &v), ncclSuccess) << ncclGetLastError(c);
  return v;
}

TEST(Suspend, ReleasesCachedPlansRefusesCallsAndResumes) {
  auto comms = initAll(2);
  runRanks(2, [&](int r) {
    ncclComm_t c = comms[static_cast<size_t>(r)];
    EXPECT_EQ(allReduceRankSum(c, r), 3.0f);
    const uint64_t plans = stat(c, ncclStatGpuMemSuspend), links = stat(c, ncclStatGpuMemPersist);
    EXPECT_GT(plans, 0u);  // the all-reduce's plan is cached
    EXPECT_GT(links, 0u);  // and it made a link to the other rank
    EXPECT_EQ(stat(c, ncclStatGpuMemTotal), plans + links);
    EXPECT_EQ(stat(c, ncclStatGpuMemSuspended), 0u);

    EXPECT_EQ(ncclCommSuspend(c, 0x4), ncclInvalidArgument);
    ASSERT_EQ(ncclCommSuspend(c, NCCL_SUSPEND_MEM), ncclSuccess) << ncclGetLastError(c);
    EXPECT_EQ(ncclCommSuspend(c, NCCL_SUSPEND_MEM), ncclInvalidUsage);  // already
    EXPECT_EQ(stat(c, ncclStatGpuMemSuspended), 1u);
    EXPECT_EQ(stat(c, ncclStatGpuMemSuspend), 0u);
    EXPECT_EQ(stat(c, ncclStatGpuMemPersist), links);
    float x = 1;
    EXPECT_EQ(ncclAllReduce(&x, &x, 1, ncclFloat, ncclSum, c, nullptr), ncclInvalidUsage);
    EXPECT_TRUE(lastErrorHas(c, "suspended")) << ncclGetLastError(c);

    ASSERT_EQ(ncclCommResume(c), ncclSuccess) << ncclGetLastError(c);
    EXPECT_EQ(ncclCommResume(c), ncclInvalidUsage);  // not suspended any more
    EXPECT_EQ(stat(c, ncclStatGpuMemSuspended), 0u);
    EXPECT_EQ(allReduceRankSum(c, r), 3.0f);  // the plan is rebuilt
    EXPECT_GT(stat(c, ncclStatGpuMemSuspend), 0u);

    // Suspended without NCCL_SUSPEND_MEM: calls stop, memory stays.
    ASSERT_EQ(ncclCommSuspend(c, 0), ncclSuccess);
    EXPECT_GT(stat(c, ncclStatGpuMemSuspend), 0u);
    EXPECT_EQ(stat(c, ncclStatGpuMemSuspended), 0u);
    ASSERT_EQ(ncclCommResume(c), ncclSuccess);
  });
  uint64_t v = 0;
  EXPECT_EQ(ncclCommMemStats(comms[0], static_cast<ncclCommMemStat_t>(7), &v), ncclInvalidArgument);
  EXPECT_EQ(ncclCommMemStats(comms[0], ncclStatGpuMemTotal, nullptr), ncclInvalidArgument);
  destroyAll(comms);
}

TEST(Suspend, DestroyWhileSuspended) {
  auto comms = initAll(2);
  for (ncclComm_t c : comms) ASSERT_EQ(ncclCommSuspend(c, NCCL_SUSPEND_MEM), ncclSuccess);
  destroyAll(comms);
}

// --- Windows ------------------------------------------------------------------------------------

TEST(Windows, RegisterGetUserPtrDeregister) {
  auto comms = initAll(2);
  std::vector<std::vector<float>> bufs(2, std::vector<float>(1024));
  std::vector<ncclWindow_t> wins(2, nullptr);
  runRanks(2, [&](int r) {  // collective: every rank registers
    ASSERT_EQ(ncclCommWindowRegister(comms[r], bufs[r].data(), bufs[r].size() * sizeof(float), &wins[r],
                                     NCCL_WIN_COLL_SYMMETRIC),
              ncclSuccess)
        << ncclGetLastError(comms[r]);
  });
  void* user = nullptr;
  EXPECT_EQ(ncclWinGetUserPtr(comms[0], wins[0], &user), ncclSuccess);
  EXPECT_EQ(user, bufs[0].data());
  EXPECT_EQ(ncclWinGetUserPtr(comms[1], wins[0], &user), ncclInvalidArgument);  // another communicator's
  EXPECT_EQ(ncclWinGetUserPtr(comms[0], wins[0], nullptr), ncclInvalidArgument);
  ncclWindow_t w = nullptr;
  EXPECT_EQ(ncclCommWindowRegister(comms[0], bufs[0].data(), 64, &w, 0x100), ncclInvalidArgument);
  EXPECT_EQ(ncclCommWindowRegister(comms[0], nullptr, 64, &w, 0), ncclInvalidArgument);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  EXPECT_EQ(ncclCommWindowRegister(comms[0], bufs[0].data(), 64, &w, 0), ncclInvalidUsage);
  EXPECT_TRUE(lastErrorHas(comms[0], "outside ncclGroupStart"));
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
  EXPECT_EQ(ncclCommWindowDeregister(comms[0], wins[0]), ncclSuccess);
  EXPECT_EQ(ncclCommWindowDeregister(comms[0], wins[0]), ncclInvalidArgument);  // stale
  EXPECT_EQ(ncclWinGetUserPtr(comms[0], wins[0], &user), ncclInvalidArgument);
  EXPECT_EQ(ncclCommWindowDeregister(comms[1], wins[1]), ncclSuccess);
  destroyAll(comms);
}

TEST(Windows, OneSidedNeedsAWindow) {
  auto comms = initAll(2);
  float x = 1;
  EXPECT_EQ(ncclSignal(1, 0, 0, 0, comms[0], nullptr), ncclInvalidUsage);
  EXPECT_TRUE(lastErrorHas(comms[0], "ncclCommWindowRegister"));
  ncclWaitSignalDesc_t d{1, 1, 0, 0};
  EXPECT_EQ(ncclWaitSignal(1, &d, comms[0], nullptr), ncclInvalidUsage);
  EXPECT_EQ(ncclPutSignal(&x, 1, ncclFloat, 1, nullptr, 0, 0, 0, 0, comms[0], nullptr), ncclInvalidUsage);
  EXPECT_EQ(ncclSignal(1, 0, 0, 0, nullptr, nullptr), ncclInvalidArgument);
  destroyAll(comms);
}

// Puts and signals between thread-ranks, with every argument check on the way.
TEST(Windows, PutSignalWaitSignal) {
  constexpr int kRanks = 3;
  auto comms = initAll(kRanks);
  runRanks(kRanks, [&](int r) {
    ncclComm_t comm = comms[r];
    const int next = (r + 1) % kRanks, prev = (r + kRanks - 1) % kRanks;
    // More than a link buffer holds, so the puts of the cycle must be landed while they are made.
    std::vector<int32_t> win(3 << 20, -1), src(win.size(), r * 1000);
    for (size_t i = 0; i < src.size(); i += 4099) src[i] = static_cast<int32_t>(i) + r;
    ncclWindow_t w = nullptr;
    ASSERT_EQ(ncclCommWindowRegister(comm, win.data(), win.size() * sizeof(int32_t), &w, NCCL_WIN_DEFAULT), ncclSuccess)
        << ncclGetLastError(comm);
    ASSERT_EQ(ncclPutSignal(src.data(), src.size() - 8, ncclInt32, next, w, 8 * sizeof(int32_t), 0, 0, 0, comm, nullptr),
              ncclSuccess)
        << ncclGetLastError(comm);
    ncclWaitSignalDesc_t d{1, prev, 0, 0};
    ASSERT_EQ(ncclWaitSignal(1, &d, comm, nullptr), ncclSuccess) << ncclGetLastError(comm);
    EXPECT_EQ(win[0], -1);  // before the offset: untouched
    EXPECT_EQ(win[8], prev);  // src[0] = 0 + prev
    EXPECT_EQ(win[8 + 4099], 4099 + prev);
    EXPECT_EQ(win[8 + 5000], prev * 1000);

    // Two signals, waited for as two descriptors on the same peer: both are needed.
    ASSERT_EQ(ncclSignal(next, 0, 0, 0, comm, nullptr), ncclSuccess);
    ASSERT_EQ(ncclSignal(next, 0, 0, 0, comm, nullptr), ncclSuccess);
    ncclWaitSignalDesc_t two[2] = {{1, prev, 0, 0}, {1, prev, 0, 0}};
    ASSERT_EQ(ncclWaitSignal(2, two, comm, nullptr), ncclSuccess) << ncclGetLastError(comm);
    ASSERT_EQ(ncclWaitSignal(0, nullptr, comm, nullptr), ncclSuccess);  // nothing to wait for

    // Bad arguments, each with its own message.
    float x = 0;
    EXPECT_EQ(ncclPutSignal(&x, 1, ncclFloat, kRanks, w, 0, 0, 0, 0, comm, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(lastErrorHas(comm, "not a rank"));
    EXPECT_EQ(ncclPutSignal(&x, 1, ncclFloat, next, w, 0, 1, 0, 0, comm, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(lastErrorHas(comm, "must be 0"));
    EXPECT_EQ(ncclPutSignal(&x, 1, ncclFloat, next, w, 0, 0, 0, 4, comm, nullptr), ncclInvalidArgument);
    EXPECT_EQ(ncclPutSignal(&x, 1, static_cast<ncclDataType_t>(99), next, w, 0, 0, 0, 0, comm, nullptr),
              ncclInvalidArgument);
    EXPECT_EQ(ncclPutSignal(nullptr, 1, ncclFloat, next, w, 0, 0, 0, 0, comm, nullptr), ncclInvalidArgument);
    EXPECT_EQ(ncclPutSignal(&x, 1, ncclFloat, next, nullptr, 0, 0, 0, 0, comm, nullptr), ncclInvalidArgument);
    EXPECT_EQ(ncclPutSignal(&x, 1, ncclFloat, next, w, win.size() * sizeof(int32_t) - 2, 0, 0, 0, comm, nullptr),
              ncclInvalidArgument);
    EXPECT_TRUE(lastErrorHas(comm, "do not fit"));
    ncclWaitSignalDesc_t bad{-1, prev, 0, 0};
    EXPECT_EQ(ncclWaitSignal(1, &bad, comm, nullptr), ncclInvalidArgument);
    EXPECT_EQ(ncclWaitSignal(1, nullptr, comm, nullptr), ncclInvalidArgument);
    ncclWaitSignalDesc_t badCtx{1, prev, 0, 2};
    EXPECT_EQ(ncclWaitSignal(1, &badCtx, comm, nullptr), ncclInvalidArgument);

    // Everyone has read its window before anyone deregisters it.
    EXPECT_FLOAT_EQ(allReduceRankSum(comm, r), kRanks * (kRanks + 1) / 2.f);
    EXPECT_EQ(ncclCommWindowDeregister(comm, w), ncclSuccess);
    // The window is gone at the source too.
    EXPECT_EQ(ncclPutSignal(&x, 1, ncclFloat, next, w, 0, 0, 0, 0, comm, nullptr), ncclInvalidArgument);
  });
  destroyAll(comms);
}

// A wait on a rank that has destroyed its communicator fails at once instead of hanging.
TEST(Windows, WaitOnDestroyedPeerFails) {
  auto comms = initAll(2);
  std::vector<std::vector<float>> bufs(2, std::vector<float>(16));
  runRanks(2, [&](int r) {
    ncclWindow_t w = nullptr;
    ASSERT_EQ(ncclCommWindowRegister(comms[r], bufs[r].data(), 64, &w, 0), ncclSuccess);
    EXPECT_FLOAT_EQ(allReduceRankSum(comms[r], r), 3.f);
  });
  ASSERT_EQ(ncclSignal(0, 0, 0, 0, comms[1], nullptr), ncclSuccess);
  ASSERT_EQ(ncclCommDestroy(comms[1]), ncclSuccess);
  ncclWaitSignalDesc_t d{1, 1, 0, 0};
  EXPECT_EQ(ncclWaitSignal(1, &d, comms[0], nullptr), ncclSuccess);  // the signal sent before it left
  EXPECT_EQ(ncclWaitSignal(1, &d, comms[0], nullptr), ncclRemoteError);
  EXPECT_TRUE(lastErrorHas(comms[0], "destroyed its communicator"));
  EXPECT_EQ(ncclCommDestroy(comms[0]), ncclSuccess);
}

// --- Parameters ---------------------------------------------------------------------------------

TEST(Params, BindAndReadEveryType) {
  atl::test::SavedEnv env;
  env.save({"NCCL_BUFFSIZE", "NCCL_SHM_DISABLE", "NCCL_SOCKET_IFNAME", "ATOLL_RD_MAX_BYTES"});
  setenv("NCCL_BUFFSIZE", "2M", 1);
  setenv("NCCL_SHM_DISABLE", "1", 1);
  setenv("NCCL_SOCKET_IFNAME", "lo", 1);
  setenv("ATOLL_RD_MAX_BYTES", "70000", 1);
  ncclResetDebugInit();  // reloads the registry from this environment

  ncclParamHandle_t size = nullptr, flag = nullptr, text = nullptr, rd = nullptr;
  ASSERT_EQ(ncclParamBind(&size, "NCCL_BUFFSIZE"), ncclSuccess);
  ASSERT_EQ(ncclParamBind(&flag, "NCCL_SHM_DISABLE"), ncclSuccess);
  ASSERT_EQ(ncclParamBind(&text, "NCCL_SOCKET_IFNAME"), ncclSuccess);
  ASSERT_EQ(ncclParamBind(&rd, "ATOLL_RD_MAX_BYTES"), ncclSuccess);
  int64_t i64 = 0;
  EXPECT_EQ(ncclParamGetI64(size, &i64), ncclSuccess);
  EXPECT_EQ(i64, 2 << 20);
  uint32_t u32 = 0;
  EXPECT_EQ(ncclParamGetU32(size, &u32), ncclSuccess);
  EXPECT_EQ(u32, 2u << 20);
  int16_t i16 = 0;
  EXPECT_EQ(ncclParamGetI16(size, &i16), ncclInvalidArgument);  // 2 MiB does not fit
  EXPECT_EQ(ncclParamGetI16(rd, &i16), ncclInvalidArgument);    // nor does 70000
  int32_t i32 = 0;
  EXPECT_EQ(ncclParamGetI32(rd, &i32), ncclSuccess);
  EXPECT_EQ(i32, 70000);
  uint8_t u8 = 9;
  EXPECT_EQ(ncclParamGetU8(flag, &u8), ncclSuccess);
  EXPECT_EQ(u8, 1);
  const char* s = nullptr;
  EXPECT_EQ(ncclParamGetStr(text, &s), ncclSuccess);
  EXPECT_STREQ(s, "lo");
  EXPECT_EQ(ncclParamGetStr(size, &s), ncclInvalidArgument);  // not a string
  EXPECT_EQ(ncclParamGetI32(text, &i32), ncclInvalidArgument);  // not a number

  char raw[16];
  int len = -1;
  EXPECT_EQ(ncclParamGet(size, raw, sizeof raw, &len), ncclSuccess);
  ASSERT_EQ(len, 8);
  std::memcpy(&i64, raw, 8);
  EXPECT_EQ(i64, 2 << 20);
  EXPECT_EQ(ncclParamGet(flag, raw, sizeof raw, &len), ncclSuccess);
  EXPECT_EQ(len, 1);
  EXPECT_EQ(raw[0], 1);
  EXPECT_EQ(ncclParamGet(text, raw, sizeof raw, &len), ncclSuccess);
  EXPECT_EQ(len, 3);
  EXPECT_STREQ(raw, "lo");
  EXPECT_EQ(ncclParamGet(size, raw, 4, &len), ncclInvalidArgument);  // too small
  EXPECT_EQ(len, 0);

  const char* value = nullptr;
  int valueLen = 0;
  EXPECT_EQ(ncclParamGetParameter("NCCL_BUFFSIZE", &value, &valueLen), ncclSuccess);
  EXPECT_STREQ(value, "2M");
  EXPECT_EQ(valueLen, 2);
  EXPECT_EQ(ncclParamGetParameter("NCCL_NO_SUCH_THING", &value, &valueLen), ncclInvalidArgument);
  EXPECT_EQ(ncclParamBind(&size, "BUFFSIZE"), ncclInvalidArgument);  // keys are the full names
  EXPECT_EQ(ncclParamBind(&size, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclParamGetI64(reinterpret_cast<ncclParamHandle_t>(&i64), &i64), ncclInvalidArgument);
  env.restore();
  ncclResetDebugInit();
}

TEST(Params, AllKeysAreTheRegistryAndDumpPrintsThem) {
  const char** keys = nullptr;
  int n = 0;
  ASSERT_EQ(ncclParamGetAllParameterKeys(&keys, &n), ncclSuccess);
  ASSERT_GT(n, 20);
  bool debug = false, buffsize = false;
  for (int i = 0; i < n; ++i) {
    const char* v = nullptr;
    int len = 0;
    EXPECT_EQ(ncclParamGetParameter(keys[i], &v, &len), ncclSuccess) << keys[i];  // each key is readable
    debug = debug || std::strcmp(keys[i], "NCCL_DEBUG") == 0;
    buffsize = buffsize || std::strcmp(keys[i], "NCCL_BUFFSIZE") == 0;
  }
  EXPECT_TRUE(debug && buffsize);
  testing::internal::CaptureStdout();
  ncclParamDumpAll();
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("NCCL_BUFFSIZE (size)"), std::string::npos) << out.substr(0, 400);
  EXPECT_NE(out.find("set_by=Default"), std::string::npos);
}

// --- Device API, host side ----------------------------------------------------------------------

// Restated from NVIDIA's nccl_device/core.h (which needs the CUDA toolkit); the ABI test checks it.
struct Team {
  int nRanks, rank, stride;
};
struct CommProperties {
  size_t size;
  unsigned int magic, version;
  int rank, nRanks, cudaDev, nvmlDev;
  bool deviceApiSupport, multimemSupport;
  int ginType, nLsaTeams;
  bool hostRmaSupport;
  int railedGinType;
};
extern "C" {
ncclResult_t ncclCommQueryProperties(ncclComm_t, CommProperties*);
Team ncclTeamWorld(ncclComm_t);
Team ncclTeamLsa(ncclComm_t);
Team ncclTeamRail(ncclComm_t);
int ncclTeamRankToWorld(ncclComm_t, Team, int);
int ncclTeamRankToLsa(ncclComm_t, Team, int);
int ncclLLA2ACalcSlots(int, int);
ncclResult_t ncclDevCommCreate(ncclComm_t, const void*, void*);
ncclResult_t ncclGetPeerDevicePointer(ncclWindow_t, size_t, int, void**);
}

TEST(DeviceApi, PropertiesAndTeamsOnOneHost) {
  auto comms = initAll(4);
  CommProperties p{};
  p.size = sizeof p;
  p.magic = NCCL_API_MAGIC;
  p.version = NCCL_VERSION_CODE;
  ASSERT_EQ(ncclCommQueryProperties(comms[2], &p), ncclSuccess) << ncclGetLastError(comms[2]);
  EXPECT_EQ(p.rank, 2);
  EXPECT_EQ(p.nRanks, 4);
  EXPECT_FALSE(p.deviceApiSupport);
  EXPECT_EQ(p.nLsaTeams, 1);  // one host
  CommProperties bad{};
  EXPECT_EQ(ncclCommQueryProperties(comms[2], &bad), ncclInvalidArgument);

  const Team world = ncclTeamWorld(comms[2]), lsa = ncclTeamLsa(comms[2]), rail = ncclTeamRail(comms[2]);
  EXPECT_EQ(world.nRanks, 4);
  EXPECT_EQ(world.rank, 2);
  EXPECT_EQ(lsa.nRanks, 4);  // every rank shares this host
  EXPECT_EQ(lsa.rank, 2);
  EXPECT_EQ(rail.nRanks, 1);
  EXPECT_EQ(ncclTeamRankToWorld(comms[2], world, 0), 0);
  EXPECT_EQ(ncclTeamRankToWorld(comms[2], lsa, 3), 3);
  EXPECT_EQ(ncclTeamRankToLsa(comms[2], world, 1), 1);
  EXPECT_EQ(ncclTeamWorld(nullptr).nRanks, 0);
  EXPECT_EQ(ncclLLA2ACalcSlots(10, 4), 10);
  EXPECT_EQ(ncclLLA2ACalcSlots(10, 12), 20);

  EXPECT_EQ(ncclDevCommCreate(comms[0], nullptr, nullptr), ncclInvalidUsage);
  EXPECT_TRUE(lastErrorHas(comms[0], "CUDA backend"));
  void* ptr = nullptr;
  EXPECT_EQ(ncclGetPeerDevicePointer(nullptr, 0, 1, &ptr), ncclInvalidUsage);
  destroyAll(comms);
}

// LSA teams are blocks of consecutive ranks on one host; anything else degrades to teams of one.
TEST(DeviceApi, LsaBlockFollowsHosts) {
  auto descs = [](std::vector<uint64_t> hosts) {
    std::vector<atl::topo::RankDesc> d(hosts.size());
    for (size_t i = 0; i < hosts.size(); ++i) d[i].hostHash = hosts[i];
    return d;
  };
  EXPECT_EQ(atl::lsaBlockSize(descs({7, 7, 7, 7})), 4);
  EXPECT_EQ(atl::lsaBlockSize(descs({1, 1, 2, 2, 3, 3})), 2);
  EXPECT_EQ(atl::lsaBlockSize(descs({1, 2, 3})), 1);
  EXPECT_EQ(atl::lsaBlockSize(descs({1, 1, 2})), 1);        // unequal blocks
  EXPECT_EQ(atl::lsaBlockSize(descs({1, 2, 1, 2})), 1);     // a host's ranks interleaved
  EXPECT_EQ(atl::lsaBlockSize(descs({1, 1, 2, 2, 1, 1})), 1);  // a host in two blocks
  EXPECT_EQ(atl::lsaBlockSize(descs({5})), 1);
}

}  // namespace
