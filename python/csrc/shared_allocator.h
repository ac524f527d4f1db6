// Tensor memory that the other processes of a host can map: Atoll's ncclMemAlloc pool (memfd
// pages, src/base/shared_pool.h). A collective on such a tensor crosses a shared-memory link in a
// single copy, the peer reading it in place, where a tensor from torch's own allocator is copied
// through the link's ring twice. This is the CPU counterpart of ProcessGroupNCCL's allocateTensor
// and MemPool over ncclMemAlloc.
#pragma once

#include <c10/core/Allocator.h>

#include <cstddef>
#include <memory>

namespace atoll_torch {

class SharedAllocator final : public c10::Allocator {
 public:
  /// Allocations of at least `minBytes` come from the pool; smaller ones from `fallback` (torch's
  /// own CPU allocator), since each pool region holds a descriptor and costs system calls.
  SharedAllocator(size_t minBytes, c10::Allocator* fallback) : minBytes_(minBytes), fallback_(fallback) {}
  c10::DataPtr allocate(size_t bytes) override;
  void copy_data(void* dest, const void* src, std::size_t count) const override;

 private:
  size_t minBytes_;
  c10::Allocator* fallback_;
};

/// Whether `data` is memory this module took from Atoll's pool.
bool isShared(const c10::DataPtr& data);

/// An allocator that takes every allocation from the pool (allocateTensor).
std::shared_ptr<c10::Allocator> poolAllocator();

/// Makes torch's CPU allocator take allocations of `minBytes` or more from the pool, so every
/// large tensor (parameters, gradients, DDP's buckets) moves in a single copy. Freed regions of up
/// to `cacheBytes` in all are kept for the next allocation of the same size: a training step frees
/// and allocates the same gradients every time, and a new region would cost system calls, fresh
/// zeroed pages and a new mapping in every peer. Raises the process's soft descriptor limit to its
/// hard limit, since each region holds a descriptor. Caveat, as for any MAP_SHARED memory: a
/// fork() child shares these pages with its parent instead of copying them. Calling it again
/// changes the threshold and the cache's size.
void enableSharedCpuAllocator(size_t minBytes, size_t cacheBytes);
/// Gives torch's CPU allocator back and frees the cached regions; tensors already allocated keep
/// their memory until they are freed.
void disableSharedCpuAllocator();

}  // namespace atoll_torch
