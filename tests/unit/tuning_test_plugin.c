/* A test-only NCCL tuner plugin, written against the ABI as an NCCL plugin author would: it makes
 * the ring free for all-reduce and asks for one channel. Built twice: v4 (default) and v3. */
#include <stddef.h>

#include "nccl.h"

typedef void (*test_logger_t)(int level, unsigned long flags, const char* file, int line, const char* fmt, ...);

static int gLive = 0; /* communicators initialised and not yet destroyed */

/* Exported so the test can check that init and destroy were paired. */
int atollTestTunerLive(void) { return gLive; }

static ncclResult_t testInit(size_t nRanks, size_t nNodes, test_logger_t log, void** context) {
  (void)nRanks;
  (void)nNodes;
  if (log) log(3, 64, __FILE__, __LINE__, "test tuner: init for %zu ranks", nRanks);
  ++gLive;
  *context = &gLive;
  return ncclSuccess;
}

static void price(int collType, float** collCostTable, int numAlgo, int numProto, int* nChannels) {
  float* table = (float*)collCostTable; /* really float[numAlgo][numProto] */
  if (collType != 4 /* ncclFuncAllReduce */ || numAlgo < 2 || numProto < 3) return;
  table[1 * numProto + 2] = 0.0f; /* [NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] */
  *nChannels = 1;
}

static ncclResult_t testDestroy(void* context) {
  if (context != &gLive) return ncclInternalError;
  --gLive;
  return ncclSuccess;
}

#ifdef ATOLL_TEST_TUNER_V3
static ncclResult_t testGetCollInfo(void* context, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                    int numAlgo, int numProto, int* nChannels) {
  (void)context;
  (void)nBytes;
  (void)numPipeOps;
  price(collType, collCostTable, numAlgo, numProto, nChannels);
  return ncclSuccess;
}
struct TestTunerV3 {
  const char* name;
  ncclResult_t (*init)(size_t, size_t, test_logger_t, void**);
  ncclResult_t (*getCollInfo)(void*, int, size_t, int, float**, int, int, int*);
  ncclResult_t (*destroy)(void*);
};
const struct TestTunerV3 ncclTunerPlugin_v3 = {"atoll-test-v3", testInit, testGetCollInfo, testDestroy};
#else
static ncclResult_t testGetCollInfo(void* context, int collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                    int numAlgo, int numProto, int regBuff, int* nChannels) {
  (void)context;
  (void)nBytes;
  (void)numPipeOps;
  (void)regBuff;
  price(collType, collCostTable, numAlgo, numProto, nChannels);
  return ncclSuccess;
}
struct TestTunerV4 {
  const char* name;
  ncclResult_t (*init)(size_t, size_t, test_logger_t, void**);
  ncclResult_t (*getCollInfo)(void*, int, size_t, int, float**, int, int, int, int*);
  ncclResult_t (*destroy)(void*);
};
const struct TestTunerV4 ncclTunerPlugin_v4 = {"atoll-test-v4", testInit, testGetCollInfo, testDestroy};
#endif
