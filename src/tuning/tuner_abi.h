// Our own declarations of NCCL's tuner plugin ABI (nccl_tuner.h, ncclTuner_v3_t / ncclTuner_v4_t),
// written from the published layout so a plugin built for NCCL loads here unchanged. Field order,
// types and the exported symbol names are the ABI; nothing else from NCCL is needed.
#pragma once

#include <cstddef>

#include "nccl.h"

namespace atl::tuning::abi {

// ncclFunc_t values as NCCL passes them in collType.
inline constexpr int kFuncBroadcast = 0;
inline constexpr int kFuncReduce = 1;
inline constexpr int kFuncAllGather = 2;
inline constexpr int kFuncReduceScatter = 3;
inline constexpr int kFuncAllReduce = 4;

// Cost table layout: float[kNumAlgorithms][kNumProtocols], rows by NCCL_ALGO_*, columns by NCCL_PROTO_*.
inline constexpr int kAlgoTree = 0;
inline constexpr int kAlgoRing = 1;
inline constexpr int kNumAlgorithms = 7;  // Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT
inline constexpr int kProtoLL = 0;
inline constexpr int kProtoLL128 = 1;
inline constexpr int kProtoSimple = 2;
inline constexpr int kNumProtocols = 3;
inline constexpr float kIgnore = -1.0f;  // NCCL_ALGO_PROTO_IGNORE: combination unavailable

extern "C" {
// ncclDebugLogger_t; level is ncclDebugLogLevel, flags NCCL_DEBUG_SUBSYS bits (same values as log::Subsys).
using Logger = void (*)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

struct TunerV3 {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, Logger logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int* nChannels);
  ncclResult_t (*destroy)(void* context);
};

// v4 adds regBuff (whether the user buffers are registered) before nChannels.
struct TunerV4 {
  const char* name;
  ncclResult_t (*init)(size_t nRanks, size_t nNodes, Logger logFunction, void** context);
  ncclResult_t (*getCollInfo)(void* context, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                              int numAlgo, int numProto, int regBuff, int* nChannels);
  ncclResult_t (*destroy)(void* context);
};
}

inline constexpr const char* kSymbolV4 = "ncclTunerPlugin_v4";
inline constexpr const char* kSymbolV3 = "ncclTunerPlugin_v3";

}  // namespace atl::tuning::abi
