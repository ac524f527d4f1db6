/*
 * Atoll's extensions beyond NCCL's API. Nothing here is needed to use Atoll as NCCL; these exist
 * for tools and tests that must fill and read device buffers without linking a CUDA runtime,
 * on whichever device backend ATOLL_DEVICE selected (cuda on a GPU, emu on a machine without
 * one). Device buffers themselves come from ncclMemAlloc.
 *
 * Programs that must also run on NVIDIA's libnccl look these up with dlsym(RTLD_DEFAULT, ...)
 * instead of linking them (perf/common/device_buffers.cc does).
 */
#ifndef ATOLL_EXT_H_
#define ATOLL_EXT_H_

#include <stddef.h>

#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A stream of the selected device backend, on the calling thread's current device. Fails with
 * ncclInvalidUsage on the host backend, which has no streams. */
ncclResult_t atollStreamCreate(cudaStream_t* stream);
ncclResult_t atollStreamDestroy(cudaStream_t stream);
/* Waits until the work enqueued on stream (collectives included) is done. */
ncclResult_t atollStreamSynchronize(cudaStream_t stream);
/* Copies after the stream's earlier work and returns once the bytes arrived (cudaMemcpyAsync
 * followed by cudaStreamSynchronize). dst and src may each be host or device memory. */
ncclResult_t atollMemcpy(void* dst, const void* src, size_t bytes, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif /* ATOLL_EXT_H_ */
