/* Calls made from C, where an enum argument may hold any int (C++ cannot pass such values without
 * undefined behaviour). Each helper makes every call that takes the argument and stores the
 * results; the C++ test checks them. */
#include <stddef.h>

#include "nccl.h"

int atollTestBadDatatypeCalls(ncclComm_t c, float* a, float* b, int raw, ncclResult_t* out) {
  ncclDataType_t dt = (ncclDataType_t)raw;
  int n = 0;
  out[n++] = ncclAllReduce(a, b, 1, dt, ncclSum, c, NULL);
  out[n++] = ncclBroadcast(a, b, 1, dt, 0, c, NULL);
  out[n++] = ncclReduce(a, b, 1, dt, ncclSum, 0, c, NULL);
  out[n++] = ncclAllGather(a, b, 1, dt, c, NULL);
  out[n++] = ncclReduceScatter(a, b, 1, dt, ncclSum, c, NULL);
  out[n++] = ncclAlltoAll(a, b, 1, dt, c, NULL);
  out[n++] = ncclSend(a, 1, dt, 0, c, NULL);
  out[n++] = ncclRecv(b, 1, dt, 0, c, NULL);
  float scalar = 1.0f;
  ncclRedOp_t op;
  out[n++] = ncclRedOpCreatePreMulSum(&op, &scalar, dt, ncclScalarHostImmediate, c);
  return n;
}

int atollTestBadOpCalls(ncclComm_t c, float* a, float* b, int raw, ncclResult_t* out) {
  ncclRedOp_t op = (ncclRedOp_t)raw;
  int n = 0;
  out[n++] = ncclAllReduce(a, b, 1, ncclFloat, op, c, NULL);
  out[n++] = ncclReduce(a, b, 1, ncclFloat, op, 0, c, NULL);
  out[n++] = ncclReduceScatter(a, b, 1, ncclFloat, op, c, NULL);
  out[n++] = ncclRedOpDestroy(op, c);
  return n;
}

const char* atollTestErrorStringOf(int raw) { return ncclGetErrorString((ncclResult_t)raw); }
