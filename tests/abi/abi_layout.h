// Layout numbers of the NCCL ABI, gathered once per header: abi_test.cc includes NVIDIA's nccl.h
// (2.28 or 2.30), abi_ours.cc includes Atoll's, and each expands ABI_DEFINE_LAYOUT_FN (and, for 2.30
// headers, ABI_DEFINE_LAYOUT230_FN) under its own name, so the headers can be compared number by
// number at run time. The first set is what 2.28 and 2.30 share; a 2.28 program must find it
// unchanged in Atoll's 2.30 library.
#pragma once

#include <cstddef>
#include <type_traits>

#define ABI_CONFIG_FIELDS(X)                                                                          \
  X(size) X(magic) X(version) X(blocking) X(cgaClusterSize) X(minCTAs) X(maxCTAs) X(netName)       \
  X(splitShare) X(trafficClass) X(commName) X(collnetEnable) X(CTAPolicy) X(shrinkShare) X(nvlsCTAs) \
  X(nChannelsPerNetPeer) X(nvlinkCentricSched)

#define ABI_SIMINFO_FIELDS(X) X(size) X(magic) X(version) X(estimatedTime)

#define ABI_CONSTANTS(X)                                                                                   \
  X(ncclSuccess) X(ncclUnhandledCudaError) X(ncclSystemError) X(ncclInternalError) X(ncclInvalidArgument) \
  X(ncclInvalidUsage) X(ncclRemoteError) X(ncclInProgress)                                                \
  X(ncclSum) X(ncclProd) X(ncclMax) X(ncclMin) X(ncclAvg) X(ncclNumOps) X(ncclMaxRedOp)                   \
  X(ncclInt8) X(ncclChar) X(ncclUint8) X(ncclInt32) X(ncclInt) X(ncclUint32) X(ncclInt64) X(ncclUint64)    \
  X(ncclFloat16) X(ncclHalf) X(ncclFloat32) X(ncclFloat) X(ncclFloat64) X(ncclDouble) X(ncclBfloat16)      \
  X(ncclFloat8e4m3) X(ncclFloat8e5m2) X(ncclNumTypes)                                                     \
  X(ncclScalarDevice) X(ncclScalarHostImmediate)                                                          \
  X(NCCL_UNIQUE_ID_BYTES) X(NCCL_SPLIT_NOCOLOR) X(NCCL_CONFIG_UNDEF_INT) X(NCCL_MAJOR)                  \
  X(NCCL_WIN_DEFAULT) X(NCCL_WIN_COLL_SYMMETRIC)                                                         \
  X(NCCL_WIN_REQUIRED_ALIGNMENT) X(NCCL_CTA_POLICY_DEFAULT) X(NCCL_CTA_POLICY_EFFICIENCY)                \
  X(NCCL_CTA_POLICY_ZERO) X(NCCL_SHRINK_DEFAULT) X(NCCL_SHRINK_ABORT)

// NCCL 2.30 only.
#define ABI_CONFIG_FIELDS_230(X) X(graphUsageMode) X(numRmaCtx) X(maxP2pPeers) X(graphStreamOrdering)
#define ABI_WAIT_DESC_FIELDS(X) X(opCnt) X(peer) X(sigIdx) X(ctx)
#define ABI_CONSTANTS_230(X)                                                                             \
  X(ncclTimeout) X(ncclNumResults) X(NCCL_MINOR) X(NCCL_PATCH) X(NCCL_VERSION_CODE) X(NCCL_API_MAGIC)  \
  X(NCCL_WIN_STRICT_ORDERING) X(NCCL_SUSPEND_MEM) X(ncclStatGpuMemSuspend) X(ncclStatGpuMemSuspended)  \
  X(ncclStatGpuMemPersist) X(ncclStatGpuMemTotal)

#define ABI_COUNT_ONE(x) +1
inline constexpr int kAbiConfigFields = 0 ABI_CONFIG_FIELDS(ABI_COUNT_ONE);
inline constexpr int kAbiSimInfoFields = 0 ABI_SIMINFO_FIELDS(ABI_COUNT_ONE);
inline constexpr int kAbiConstants = 0 ABI_CONSTANTS(ABI_COUNT_ONE);
inline constexpr int kAbiConfigFields230 = 0 ABI_CONFIG_FIELDS_230(ABI_COUNT_ONE);
inline constexpr int kAbiWaitDescFields = 0 ABI_WAIT_DESC_FIELDS(ABI_COUNT_ONE);
inline constexpr int kAbiConstants230 = 0 ABI_CONSTANTS_230(ABI_COUNT_ONE);

struct AbiLayout {
  size_t uniqueIdSize, commHandleSize, configSize, configAlign, simInfoSize, redOpSize, dataTypeSize, resultSize;
  size_t configOffsets[kAbiConfigFields];
  size_t simInfoOffsets[kAbiSimInfoFields];
  long long constants[kAbiConstants];
  // The initializer's values (as bytes would not compare: padding), field by field.
  long long configInit[kAbiConfigFields];
};

struct AbiLayout230 {
  size_t configOffsets[kAbiConfigFields230];
  long long configInit[kAbiConfigFields230];
  size_t waitDescSize;
  size_t waitDescOffsets[kAbiWaitDescFields];
  long long constants[kAbiConstants230];
  size_t memStatSize;
};

#define ABI_STRINGIFY_COMMA(x) #x,
inline const char* const kAbiConfigNames[] = {ABI_CONFIG_FIELDS(ABI_STRINGIFY_COMMA)};
inline const char* const kAbiSimInfoNames[] = {ABI_SIMINFO_FIELDS(ABI_STRINGIFY_COMMA)};
inline const char* const kAbiConstantNames[] = {ABI_CONSTANTS(ABI_STRINGIFY_COMMA)};
inline const char* const kAbiConfigNames230[] = {ABI_CONFIG_FIELDS_230(ABI_STRINGIFY_COMMA)};
inline const char* const kAbiWaitDescNames[] = {ABI_WAIT_DESC_FIELDS(ABI_STRINGIFY_COMMA)};
inline const char* const kAbiConstantNames230[] = {ABI_CONSTANTS_230(ABI_STRINGIFY_COMMA)};

#define ABI_CONFIG_OFFSET(f) layout.configOffsets[i++] = offsetof(ncclConfig_t, f);
#define ABI_SIMINFO_OFFSET(f) layout.simInfoOffsets[i++] = offsetof(ncclSimInfo_t, f);
#define ABI_CONSTANT(c) layout.constants[i++] = static_cast<long long>(c);
#define ABI_CONFIG_INIT(f) layout.configInit[i++] = abiAsNumber(cfg.f);

template <typename T>
long long abiAsNumber(T v) {
  if constexpr (std::is_pointer_v<T>) {
    return v == nullptr ? 0 : 1;
  } else {
    return static_cast<long long>(v);
  }
}

// Defines `AbiLayout name()` from whichever nccl.h the including file has seen.
#define ABI_DEFINE_LAYOUT_FN(name)                                                                \
  AbiLayout name() {                                                                              \
    AbiLayout layout{};                                                                           \
    layout.uniqueIdSize = sizeof(ncclUniqueId);                                                   \
    layout.commHandleSize = sizeof(ncclComm_t);                                                   \
    layout.configSize = sizeof(ncclConfig_t);                                                     \
    layout.configAlign = alignof(ncclConfig_t);                                                   \
    layout.simInfoSize = sizeof(ncclSimInfo_t);                                                   \
    layout.redOpSize = sizeof(ncclRedOp_t);                                                       \
    layout.dataTypeSize = sizeof(ncclDataType_t);                                                 \
    layout.resultSize = sizeof(ncclResult_t);                                                     \
    int i = 0;                                                                                    \
    ABI_CONFIG_FIELDS(ABI_CONFIG_OFFSET)                                                          \
    i = 0;                                                                                        \
    ABI_SIMINFO_FIELDS(ABI_SIMINFO_OFFSET)                                                        \
    i = 0;                                                                                        \
    ABI_CONSTANTS(ABI_CONSTANT)                                                                   \
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;                                                   \
    i = 0;                                                                                        \
    ABI_CONFIG_FIELDS(ABI_CONFIG_INIT)                                                            \
    return layout;                                                                                \
  }

#define ABI_WAIT_DESC_OFFSET(f) layout.waitDescOffsets[i++] = offsetof(ncclWaitSignalDesc_t, f);

#define ABI_DEFINE_LAYOUT230_FN(name)                                                             \
  AbiLayout230 name() {                                                                           \
    AbiLayout230 layout{};                                                                        \
    int i = 0;                                                                                    \
    ABI_CONFIG_FIELDS_230(ABI_CONFIG_OFFSET)                                                      \
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;                                                   \
    i = 0;                                                                                        \
    ABI_CONFIG_FIELDS_230(ABI_CONFIG_INIT)                                                        \
    layout.waitDescSize = sizeof(ncclWaitSignalDesc_t);                                           \
    i = 0;                                                                                        \
    ABI_WAIT_DESC_FIELDS(ABI_WAIT_DESC_OFFSET)                                                    \
    i = 0;                                                                                        \
    ABI_CONSTANTS_230(ABI_CONSTANT)                                                               \
    layout.memStatSize = sizeof(ncclCommMemStat_t);                                               \
    return layout;                                                                                \
  }

AbiLayout abiLayoutOurs();        // abi_ours.cc: Atoll's include/nccl.h
AbiLayout230 abiLayout230Ours();  // likewise
