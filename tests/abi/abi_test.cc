// ABI test: this file is compiled against NVIDIA's nccl.h (the CUDA include directory comes first
// on the include path) and linked to Atoll's libnccl.so.2 only. It proves a program built for
// NVIDIA NCCL runs unchanged on Atoll: static layout checks against the NVIDIA header, a run-time
// comparison with the numbers compiled from Atoll's own header (abi_ours.cc), then two ranks doing
// real collectives through the NVIDIA declarations.
#include <nccl.h>

#ifndef CUDART_VERSION
#error "abi_test.cc must be compiled against NVIDIA's nccl.h (which includes cuda_runtime.h)"
#endif

#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/abi/abi_layout.h"

static_assert(sizeof(ncclUniqueId) == 128, "ncclUniqueId must be 128 bytes");
static_assert(NCCL_UNIQUE_ID_BYTES == 128);
static_assert(offsetof(ncclConfig_t, size) == 0);
static_assert(offsetof(ncclConfig_t, magic) == 8);
static_assert(offsetof(ncclConfig_t, version) == 12);
static_assert(offsetof(ncclConfig_t, blocking) == 16);
static_assert(offsetof(ncclConfig_t, cgaClusterSize) == 20);
static_assert(offsetof(ncclConfig_t, minCTAs) == 24);
static_assert(offsetof(ncclConfig_t, maxCTAs) == 28);
static_assert(offsetof(ncclConfig_t, netName) == 32);
static_assert(offsetof(ncclConfig_t, splitShare) == 40);
static_assert(offsetof(ncclConfig_t, trafficClass) == 44);
static_assert(offsetof(ncclConfig_t, commName) == 48);
static_assert(offsetof(ncclConfig_t, collnetEnable) == 56);
static_assert(offsetof(ncclConfig_t, CTAPolicy) == 60);
static_assert(offsetof(ncclConfig_t, shrinkShare) == 64);
static_assert(offsetof(ncclConfig_t, nvlsCTAs) == 68);
static_assert(offsetof(ncclConfig_t, nChannelsPerNetPeer) == 72);
static_assert(offsetof(ncclConfig_t, nvlinkCentricSched) == 76);
static_assert(ncclSuccess == 0 && ncclUnhandledCudaError == 1 && ncclSystemError == 2 && ncclInternalError == 3 &&
              ncclInvalidArgument == 4 && ncclInvalidUsage == 5 && ncclRemoteError == 6 && ncclInProgress == 7);
static_assert(ncclSum == 0 && ncclProd == 1 && ncclMax == 2 && ncclMin == 3 && ncclAvg == 4 && ncclNumOps == 5);
static_assert(ncclInt8 == 0 && ncclUint8 == 1 && ncclInt32 == 2 && ncclUint32 == 3 && ncclInt64 == 4 &&
              ncclUint64 == 5 && ncclFloat16 == 6 && ncclFloat32 == 7 && ncclFloat64 == 8 && ncclBfloat16 == 9 &&
              ncclFloat8e4m3 == 10 && ncclFloat8e5m2 == 11 && ncclNumTypes == 12);
static_assert(ncclScalarDevice == 0 && ncclScalarHostImmediate == 1);
#if NCCL_MINOR >= 30
// NVIDIA's 2.30 header: Atoll must match it exactly, including the host side of the device API.
#include <nccl_device/core.h>
#define ABI_NVIDIA_230 1
static_assert(sizeof(ncclConfig_t) == 96, "ncclConfig_t size (x86-64)");
static_assert(offsetof(ncclConfig_t, graphStreamOrdering) == 92);
static_assert(ncclTimeout == 8 && ncclNumResults == 9);
static_assert(NCCL_VERSION(2, 30, 7) == 23007);
#else
// NVIDIA's 2.28 header: a program built then must run on Atoll's 2.30 library unchanged.
#define ABI_NVIDIA_230 0
static_assert(sizeof(ncclConfig_t) == 80, "ncclConfig_t size (x86-64)");
static_assert(ncclNumResults == 8);
static_assert(NCCL_VERSION(2, 28, 9) == 22809);
#endif

ABI_DEFINE_LAYOUT_FN(abiLayoutNvidia)
#if ABI_NVIDIA_230
ABI_DEFINE_LAYOUT230_FN(abiLayout230Nvidia)
#endif

namespace {

int gFailures = 0;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      ++gFailures;                                         \
      std::printf("FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      std::printf(__VA_ARGS__);                            \
      std::printf("\n");                                   \
    }                                                      \
  } while (0)

void compareLayouts() {
  const AbiLayout nv = abiLayoutNvidia(), ours = abiLayoutOurs();
#define CMP_SIZE(f) CHECK(nv.f == ours.f, #f ": NVIDIA %zu, Atoll %zu", nv.f, ours.f)
  CMP_SIZE(uniqueIdSize);
  CMP_SIZE(commHandleSize);
#if ABI_NVIDIA_230
  CMP_SIZE(configSize);
#else
  // The 2.28 struct is a prefix of ours; the library reads only `size` bytes of what callers pass.
  CHECK(ours.configSize >= nv.configSize, "ncclConfig_t: NVIDIA 2.28 %zu bytes, Atoll %zu", nv.configSize,
        ours.configSize);
#endif
  CMP_SIZE(configAlign);
  CMP_SIZE(simInfoSize);
  CMP_SIZE(redOpSize);
  CMP_SIZE(dataTypeSize);
  CMP_SIZE(resultSize);
#undef CMP_SIZE
  for (int i = 0; i < kAbiConfigFields; ++i) {
    CHECK(nv.configOffsets[i] == ours.configOffsets[i], "offsetof(ncclConfig_t, %s): NVIDIA %zu, Atoll %zu",
          kAbiConfigNames[i], nv.configOffsets[i], ours.configOffsets[i]);
    // Under 2.28 the initializer's size and version are 2.28's own, by design.
    const bool versioned = std::strcmp(kAbiConfigNames[i], "size") == 0 || std::strcmp(kAbiConfigNames[i], "version") == 0;
    if (ABI_NVIDIA_230 || !versioned)
      CHECK(nv.configInit[i] == ours.configInit[i], "NCCL_CONFIG_INITIALIZER .%s: NVIDIA %lld, Atoll %lld",
            kAbiConfigNames[i], nv.configInit[i], ours.configInit[i]);
  }
  for (int i = 0; i < kAbiSimInfoFields; ++i)
    CHECK(nv.simInfoOffsets[i] == ours.simInfoOffsets[i], "offsetof(ncclSimInfo_t, %s): NVIDIA %zu, Atoll %zu",
          kAbiSimInfoNames[i], nv.simInfoOffsets[i], ours.simInfoOffsets[i]);
  for (int i = 0; i < kAbiConstants; ++i)
    CHECK(nv.constants[i] == ours.constants[i], "%s: NVIDIA %lld, Atoll %lld", kAbiConstantNames[i], nv.constants[i],
          ours.constants[i]);
#if ABI_NVIDIA_230
  const AbiLayout230 nv30 = abiLayout230Nvidia(), ours30 = abiLayout230Ours();
  for (int i = 0; i < kAbiConfigFields230; ++i) {
    CHECK(nv30.configOffsets[i] == ours30.configOffsets[i], "offsetof(ncclConfig_t, %s): NVIDIA %zu, Atoll %zu",
          kAbiConfigNames230[i], nv30.configOffsets[i], ours30.configOffsets[i]);
    CHECK(nv30.configInit[i] == ours30.configInit[i], "NCCL_CONFIG_INITIALIZER .%s: NVIDIA %lld, Atoll %lld",
          kAbiConfigNames230[i], nv30.configInit[i], ours30.configInit[i]);
  }
  CHECK(nv30.waitDescSize == ours30.waitDescSize, "ncclWaitSignalDesc_t: NVIDIA %zu, Atoll %zu", nv30.waitDescSize,
        ours30.waitDescSize);
  for (int i = 0; i < kAbiWaitDescFields; ++i)
    CHECK(nv30.waitDescOffsets[i] == ours30.waitDescOffsets[i], "offsetof(ncclWaitSignalDesc_t, %s): NVIDIA %zu, Atoll %zu",
          kAbiWaitDescNames[i], nv30.waitDescOffsets[i], ours30.waitDescOffsets[i]);
  for (int i = 0; i < kAbiConstants230; ++i)
    CHECK(nv30.constants[i] == ours30.constants[i], "%s: NVIDIA %lld, Atoll %lld", kAbiConstantNames230[i],
          nv30.constants[i], ours30.constants[i]);
  CHECK(nv30.memStatSize == ours30.memStatSize, "ncclCommMemStat_t size");
#endif
}

// The NCCL entry points must come from Atoll's libnccl.so.2, and neither the CUDA runtime nor
// NVIDIA's NCCL may be loaded.
void checkLoadedLibraries() {
  Dl_info info{};
  CHECK(dladdr(reinterpret_cast<void*>(&ncclGetVersion), &info) != 0 && info.dli_fname, "dladdr(ncclGetVersion)");
  if (info.dli_fname) {
    char got[4096], want[4096];
    const bool ok = realpath(info.dli_fname, got) && realpath(ATOLL_EXPECTED_NCCL, want);
    CHECK(ok && std::strcmp(got, want) == 0, "ncclGetVersion comes from %s, expected %s", info.dli_fname,
          ATOLL_EXPECTED_NCCL);
  }
  dl_iterate_phdr(
      [](dl_phdr_info* pi, size_t, void*) {
        const char* name = pi->dlpi_name ? pi->dlpi_name : "";
        CHECK(std::strstr(name, "libcudart") == nullptr && std::strstr(name, "libcuda.so") == nullptr,
              "CUDA runtime loaded: %s", name);
        return 0;
      },
      nullptr);
}

void runRank(ncclUniqueId id, int rank, int nranks, std::vector<std::string>* errors) {
  auto fail = [&](const char* what, ncclResult_t r) {
    errors->push_back(std::string("rank ") + std::to_string(rank) + ": " + what + " -> " + ncclGetErrorString(r) +
                      ": " + ncclGetLastError(nullptr));
  };
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;  // NVIDIA's initializer: size, magic, version from its header (2.28: shorter)
  cfg.commName = "abi-test";
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRankConfig(&comm, nranks, id, rank, &cfg);
  if (r != ncclSuccess) return fail("ncclCommInitRankConfig", r);

  const size_t count = 1031;
  std::vector<float> send(count), recv(count, -1.0f);
  for (size_t i = 0; i < count; ++i) send[i] = static_cast<float>(rank + 1) * static_cast<float>(i % 13);
  r = ncclAllReduce(send.data(), recv.data(), count, ncclFloat, ncclSum, comm, /*stream=*/nullptr);
  if (r != ncclSuccess) return fail("ncclAllReduce", r);
  const float ranksum = static_cast<float>(nranks * (nranks + 1) / 2);
  for (size_t i = 0; i < count; ++i)
    if (recv[i] != ranksum * static_cast<float>(i % 13)) {
      errors->push_back("rank " + std::to_string(rank) + ": allreduce mismatch at " + std::to_string(i));
      break;
    }

  const size_t gcount = 17;
  std::vector<int32_t> gsend(gcount), grecv(gcount * static_cast<size_t>(nranks), -1);
  for (size_t i = 0; i < gcount; ++i) gsend[i] = rank * 1000 + static_cast<int32_t>(i);
  r = ncclAllGather(gsend.data(), grecv.data(), gcount, ncclInt32, comm, nullptr);
  if (r != ncclSuccess) return fail("ncclAllGather", r);
  for (size_t j = 0; j < grecv.size(); ++j)
    if (grecv[j] != static_cast<int32_t>((j / gcount) * 1000 + j % gcount)) {
      errors->push_back("rank " + std::to_string(rank) + ": allgather mismatch at " + std::to_string(j));
      break;
    }

#if ABI_NVIDIA_230
  // The 2.30 additions, called through NVIDIA's declarations and structs.
  ncclCommProperties_t props = NCCL_COMM_PROPERTIES_INITIALIZER;
  if ((r = ncclCommQueryProperties(comm, &props)) != ncclSuccess) return fail("ncclCommQueryProperties", r);
  if (props.rank != rank || props.nRanks != nranks || props.deviceApiSupport)
    errors->push_back("rank " + std::to_string(rank) + ": ncclCommQueryProperties wrong");
  const ncclTeam_t world = ncclTeamWorld(comm);
  if (world.nRanks != nranks || world.rank != rank || world.stride != 1 ||
      ncclTeamRankToWorld(comm, world, nranks - 1) != nranks - 1)
    errors->push_back("rank " + std::to_string(rank) + ": ncclTeamWorld wrong");
  uint64_t held = 0;
  if ((r = ncclCommMemStats(comm, ncclStatGpuMemPersist, &held)) != ncclSuccess) return fail("ncclCommMemStats", r);
  if (held == 0) errors->push_back("rank " + std::to_string(rank) + ": no link memory reported after collectives");
  if ((r = ncclCommSuspend(comm, NCCL_SUSPEND_MEM)) != ncclSuccess) return fail("ncclCommSuspend", r);
  if ((r = ncclCommResume(comm)) != ncclSuccess) return fail("ncclCommResume", r);
  ncclWindow_t win = nullptr;
  void* user = nullptr;
  if ((r = ncclCommWindowRegister(comm, recv.data(), recv.size() * sizeof(float), &win, NCCL_WIN_DEFAULT)) !=
          ncclSuccess ||
      (r = ncclWinGetUserPtr(comm, win, &user)) != ncclSuccess || (r = ncclCommWindowDeregister(comm, win)) != ncclSuccess)
    return fail("window register / get user pointer / deregister", r);
  if (user != recv.data()) errors->push_back("rank " + std::to_string(rank) + ": ncclWinGetUserPtr wrong");
  alignas(64) static thread_local unsigned char devComm[1 << 14];  // ncclDevComm is opaque to host code
  ncclDevCommRequirements_t reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
  if (ncclDevCommCreate(comm, &reqs, reinterpret_cast<ncclDevComm_t*>(devComm)) != ncclInvalidUsage)
    errors->push_back("rank " + std::to_string(rank) + ": ncclDevCommCreate must say the device API needs CUDA");
#endif
  int n = 0, me = -1;
  if (ncclCommCount(comm, &n) != ncclSuccess || n != nranks || ncclCommUserRank(comm, &me) != ncclSuccess ||
      me != rank)
    errors->push_back("rank " + std::to_string(rank) + ": ncclCommCount/UserRank wrong");
  if ((r = ncclCommFinalize(comm)) != ncclSuccess) return fail("ncclCommFinalize", r);
  if ((r = ncclCommDestroy(comm)) != ncclSuccess) return fail("ncclCommDestroy", r);
}

}  // namespace

#if ABI_NVIDIA_230
// The parameter API through NVIDIA's declarations: keys are full variable names.
void checkParams() {
  const char* value = nullptr;
  int len = -1;
  CHECK(ncclParamGetParameter("NCCL_BUFFSIZE", &value, &len) == ncclSuccess && len > 0,
        "ncclParamGetParameter(NCCL_BUFFSIZE)");
  ncclParamHandle_t h = nullptr;
  int64_t bytes = 0;
  CHECK(ncclParamBind(&h, "NCCL_BUFFSIZE") == ncclSuccess && ncclParamGetI64(h, &bytes) == ncclSuccess && bytes > 0,
        "ncclParamBind/ncclParamGetI64(NCCL_BUFFSIZE)");
  const char** keys = nullptr;
  int nkeys = 0;
  CHECK(ncclParamGetAllParameterKeys(&keys, &nkeys) == ncclSuccess && nkeys > 0, "ncclParamGetAllParameterKeys");
}
#endif

int main() {
#if ABI_NVIDIA_230
  checkParams();
#endif
  compareLayouts();
  checkLoadedLibraries();

  int version = 0;
  CHECK(ncclGetVersion(&version) == ncclSuccess && version >= NCCL_VERSION_CODE && version == 23007,
        "ncclGetVersion = %d, NVIDIA header says %d, Atoll is 2.30.7", version, NCCL_VERSION_CODE);

  ncclUniqueId id;
  ncclResult_t r = ncclGetUniqueId(&id);
  CHECK(r == ncclSuccess, "ncclGetUniqueId -> %d", static_cast<int>(r));
  if (r == ncclSuccess) {
    const int nranks = 2;
    std::vector<std::vector<std::string>> errors(nranks);
    std::vector<std::thread> threads;
    for (int rank = 0; rank < nranks; ++rank)
      threads.emplace_back(runRank, id, rank, nranks, &errors[static_cast<size_t>(rank)]);
    for (auto& t : threads) t.join();
    for (auto& e : errors)
      for (auto& msg : e) CHECK(false, "%s", msg.c_str());
  }
  std::printf("abi_test: %s (%d failures)\n", gFailures ? "FAILED" : "passed", gFailures);
  return gFailures ? 1 : 0;
}
