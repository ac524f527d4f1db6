/*
 * Atoll: NCCL 2.30-compatible public API.
 *
 * This header is ABI-compatible with NVIDIA NCCL 2.30.7 (same enum values, same ncclUniqueId size,
 * same ncclConfig_t layout), so a program compiled against NVIDIA's nccl.h (2.30, or 2.28 with its
 * shorter ncclConfig_t) runs unchanged against Atoll's libnccl.so.2. Unlike NVIDIA's header it does not require the CUDA toolkit: when
 * cuda_runtime.h has not been included, cudaStream_t is declared as the same opaque pointer type.
 */
#ifndef NCCL_H_
#define NCCL_H_

#if defined(__has_include)
#if __has_include(<cuda_runtime.h>) && defined(ATOLL_WITH_CUDA_HEADERS)
#include <cuda_runtime.h>
#endif
#endif

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define NCCL_MAJOR 2
#define NCCL_MINOR 30
#define NCCL_PATCH 7
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 23007
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(__CUDA_RUNTIME_H__) && !defined(CUDART_VERSION)
/* Same type as the CUDA runtime's cudaStream_t, so both headers can meet in one program. */
typedef struct CUstream_st* cudaStream_t;
#endif

/** Opaque handle to a communicator. */
typedef struct ncclComm* ncclComm_t;
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
/** Rendezvous token: root address plus a random secret; distribute it to every rank. */
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclTimeout = 8,
  ncclNumResults = 9
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f
#define NCCL_API_MAGIC 0xcafebeef

#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_STRICT_ORDERING 0x02
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

#define NCCL_REVOKE_DEFAULT 0x00

/** Communicator configuration; initialise with NCCL_CONFIG_INITIALIZER. Layout fixed by NCCL 2.30;
 *  2.28 callers pass the same struct without its last four fields (size tells). */
typedef struct ncclConfig_v23000 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
  int graphUsageMode;
  int numRmaCtx;
  int maxP2pPeers;
  int graphStreamOrdering;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                                    \
  {                                                                                                \
    sizeof(ncclConfig_t), NCCL_API_MAGIC, NCCL_VERSION_CODE, NCCL_CONFIG_UNDEF_INT,                 \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, \
        NCCL_CONFIG_UNDEF_INT,                                                                     \
  }

typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime;
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER \
  { sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION_CODE, NCCL_UNDEF_FLOAT }

/** ncclCommSuspend flags. */
#define NCCL_SUSPEND_MEM 0x01

/** ncclCommMemStats statistics. */
typedef enum {
  ncclStatGpuMemSuspend = 0,   /* bytes the communicator holds that ncclCommSuspend can release */
  ncclStatGpuMemSuspended = 1, /* 1 while those are released, else 0 */
  ncclStatGpuMemPersist = 2,   /* bytes held until destroy */
  ncclStatGpuMemTotal = 3      /* both */
} ncclCommMemStat_t;

/** One ncclWaitSignal descriptor: wait for opCnt signals from peer on (sigIdx, ctx). */
typedef struct {
  int opCnt;
  int peer;
  int sigIdx;
  int ctx;
} ncclWaitSignalDesc_t;

/** Handle to one parameter of the registry (ncclParamBind). */
typedef struct ncclParamHandle* ncclParamHandle_t;

typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* Each entry point also exists with a 'p' prefix (profiling interface), as in NCCL. */
#define ATOLL_DECLARE(ret, name, ...) \
  ret name(__VA_ARGS__);              \
  ret p##name(__VA_ARGS__)

ATOLL_DECLARE(ncclResult_t, ncclMemAlloc, void** ptr, size_t size);
ATOLL_DECLARE(ncclResult_t, ncclMemFree, void* ptr);
ATOLL_DECLARE(ncclResult_t, ncclGetVersion, int* version);
ATOLL_DECLARE(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId);
ATOLL_DECLARE(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
              ncclConfig_t* config);
ATOLL_DECLARE(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank);
ATOLL_DECLARE(ncclResult_t, ncclCommInitAll, ncclComm_t* comm, int ndev, const int* devlist);
ATOLL_DECLARE(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
              ncclUniqueId* commIds, ncclConfig_t* config);
ATOLL_DECLARE(ncclResult_t, ncclCommFinalize, ncclComm_t comm);
ATOLL_DECLARE(ncclResult_t, ncclCommDestroy, ncclComm_t comm);
ATOLL_DECLARE(ncclResult_t, ncclCommAbort, ncclComm_t comm);
ATOLL_DECLARE(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags);
ATOLL_DECLARE(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
              ncclConfig_t* config);
ATOLL_DECLARE(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
              ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags);
/* Growing: the root existing rank calls ncclCommGetUniqueId and hands the id to the new ranks only;
 * existing ranks call ncclCommGrow(comm, n, root ? &id : NULL, -1, ...), new ranks
 * ncclCommGrow(NULL, n, &id, rank, ...). Existing ranks keep their rank numbers. */
ATOLL_DECLARE(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId);
ATOLL_DECLARE(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
              ncclComm_t* newcomm, ncclConfig_t* config);
ATOLL_DECLARE(const char*, ncclGetErrorString, ncclResult_t result);
ATOLL_DECLARE(const char*, ncclGetLastError, ncclComm_t comm);
ATOLL_DECLARE(void, ncclResetDebugInit, void);
ATOLL_DECLARE(ncclResult_t, ncclCommGetAsyncError, ncclComm_t comm, ncclResult_t* asyncError);
ATOLL_DECLARE(ncclResult_t, ncclCommCount, const ncclComm_t comm, int* count);
ATOLL_DECLARE(ncclResult_t, ncclCommCuDevice, const ncclComm_t comm, int* device);
ATOLL_DECLARE(ncclResult_t, ncclCommUserRank, const ncclComm_t comm, int* rank);
ATOLL_DECLARE(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle);
ATOLL_DECLARE(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle);
ATOLL_DECLARE(ncclResult_t, ncclCommSuspend, ncclComm_t comm, int flags);
ATOLL_DECLARE(ncclResult_t, ncclCommResume, ncclComm_t comm);
ATOLL_DECLARE(ncclResult_t, ncclCommMemStats, ncclComm_t comm, ncclCommMemStat_t stat, uint64_t* value);
ATOLL_DECLARE(ncclResult_t, ncclCommWindowRegister, ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
              int winFlags);
ATOLL_DECLARE(ncclResult_t, ncclCommWindowDeregister, ncclComm_t comm, ncclWindow_t win);
ATOLL_DECLARE(ncclResult_t, ncclWinGetUserPtr, ncclComm_t comm, ncclWindow_t win, void** outUserPtr);
ATOLL_DECLARE(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
              ncclScalarResidence_t residence, ncclComm_t comm);
ATOLL_DECLARE(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm);
ATOLL_DECLARE(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
              ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
              cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount,
              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
              int root, ncclComm_t comm, cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count,
              ncclDataType_t datatype, int root, ncclComm_t comm, cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer,
              ncclComm_t comm, cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
              ncclComm_t comm, cudaStream_t stream);
/* One-sided operations on windows (ncclCommWindowRegister). */
ATOLL_DECLARE(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
              ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
              cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
              cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
              cudaStream_t stream);
ATOLL_DECLARE(ncclResult_t, ncclGroupStart, void);
ATOLL_DECLARE(ncclResult_t, ncclGroupEnd, void);
ATOLL_DECLARE(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo);

/* The parameter registry (every variable atoll-info --params lists), by key (its NCCL_ or ATOLL_
 * name). Typed getters fail with ncclInvalidArgument on a string parameter or a value the type
 * cannot hold; returned strings stay valid until the same call on the same thread. */
ATOLL_DECLARE(ncclResult_t, ncclParamBind, ncclParamHandle_t* out, const char* key);
ATOLL_DECLARE(ncclResult_t, ncclParamGetI8, ncclParamHandle_t h, int8_t* out);
ATOLL_DECLARE(ncclResult_t, ncclParamGetI16, ncclParamHandle_t h, int16_t* out);
ATOLL_DECLARE(ncclResult_t, ncclParamGetI32, ncclParamHandle_t h, int32_t* out);
ATOLL_DECLARE(ncclResult_t, ncclParamGetI64, ncclParamHandle_t h, int64_t* out);
ATOLL_DECLARE(ncclResult_t, ncclParamGetU8, ncclParamHandle_t h, uint8_t* out);
ATOLL_DECLARE(ncclResult_t, ncclParamGetU16, ncclParamHandle_t h, uint16_t* out);
ATOLL_DECLARE(ncclResult_t, ncclParamGetU32, ncclParamHandle_t h, uint32_t* out);
ATOLL_DECLARE(ncclResult_t, ncclParamGetU64, ncclParamHandle_t h, uint64_t* out);
ATOLL_DECLARE(ncclResult_t, ncclParamGetStr, ncclParamHandle_t h, const char** out);
ATOLL_DECLARE(ncclResult_t, ncclParamGet, ncclParamHandle_t h, void* out, int maxLen, int* len);
ATOLL_DECLARE(ncclResult_t, ncclParamGetParameter, const char* key, const char** value, int* valueLen);
ATOLL_DECLARE(ncclResult_t, ncclParamGetAllParameterKeys, const char*** table, int* tableLen);
ATOLL_DECLARE(void, ncclParamDumpAll, void);

#undef ATOLL_DECLARE

#ifdef __cplusplus
}
#endif

#endif /* NCCL_H_ */
