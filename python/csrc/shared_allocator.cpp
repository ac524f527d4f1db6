#include "shared_allocator.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <sys/resource.h>

#include <map>
#include <mutex>
#include <string>

#include "atoll_lib.h"

namespace atoll_torch {
namespace {

// The pool hands out whole pages, so sizes within a page are one size to the cache.
size_t pageRound(size_t bytes) { return (bytes + 4095) / 4096 * 4096; }

/// Freed regions kept for reuse, by size. Torch frees through a plain function pointer, so the
/// cache is one per process.
class RegionCache {
 public:
  void* take(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(pageRound(bytes));
    if (it == free_.end()) return nullptr;
    void* p = it->second;
    cached_ -= it->first;
    free_.erase(it);
    return p;
  }
  void give(void* p, size_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cached_ + pageRound(bytes) <= limit_) {
        free_.emplace(pageRound(bytes), p);
        cached_ += pageRound(bytes);
        return;
      }
    }
    // A free has nowhere to report an error to; ncclMemFree of a pool region does not fail.
    (void)atoll().MemFree(p);
  }
  void setLimit(size_t limit) {
    std::multimap<size_t, void*> drop;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      limit_ = limit;
      while (cached_ > limit_) {
        auto it = std::prev(free_.end());  // largest first: the fewest frees to get under
        cached_ -= it->first;
        drop.insert(free_.extract(it));
      }
    }
    for (const auto& [bytes, p] : drop) (void)atoll().MemFree(p);
  }

 private:
  std::mutex mutex_;
  std::multimap<size_t, void*> free_;
  size_t cached_ = 0;
  size_t limit_ = 0;
};

RegionCache& cache() {
  static RegionCache* c = new RegionCache;  // never destroyed: tensors may be freed at exit
  return *c;
}

/// What a pool tensor's DataPtr carries as its context, so its free knows the size.
struct Block {
  void* p;
  size_t bytes;
};

void freeShared(void* context) {
  auto* block = static_cast<Block*>(context);
  cache().give(block->p, block->bytes);
  delete block;
}

// Torch keeps a raw pointer to its CPU allocator and frees through each DataPtr's own deleter,
// so allocators handed to SetCPUAllocator must outlive every tensor: they are never destroyed.
struct Installed {
  std::mutex mutex;
  c10::Allocator* original = nullptr;  // torch's allocator before the first enable
};

Installed& installed() {
  static Installed* state = new Installed;
  return *state;
}

// Above torch's default (0) so the swap takes, and equal on the way back so disable can undo it.
constexpr uint8_t kPriority = 1;

void raiseDescriptorLimit() {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur < lim.rlim_max) {
    lim.rlim_cur = lim.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &lim);  // best effort: the pool falls back to private memory
  }
}

}  // namespace

c10::DataPtr SharedAllocator::allocate(size_t bytes) {
  if (bytes == 0 || bytes < minBytes_) return fallback_->allocate(bytes);
  void* p = cache().take(bytes);
  if (p == nullptr) {
    const ncclResult_t r = atoll().MemAlloc(&p, bytes);
    TORCH_CHECK(r == ncclSuccess, "atoll: ncclMemAlloc of ", bytes, " bytes failed: ", atoll().GetErrorString(r),
                ": ", atoll().GetLastError(nullptr));
  }
  return {p, new Block{p, bytes}, &freeShared, c10::Device(c10::DeviceType::CPU)};
}

void SharedAllocator::copy_data(void* dest, const void* src, std::size_t count) const {
  default_copy_data(dest, src, count);
}

bool isShared(const c10::DataPtr& data) { return data.get_deleter() == &freeShared; }

std::shared_ptr<c10::Allocator> poolAllocator() {
  static const std::shared_ptr<c10::Allocator> pool = std::make_shared<SharedAllocator>(0, c10::GetCPUAllocator());
  return pool;
}

void enableSharedCpuAllocator(size_t minBytes, size_t cacheBytes) {
  Installed& s = installed();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.original == nullptr) s.original = c10::GetCPUAllocator();
  raiseDescriptorLimit();
  cache().setLimit(cacheBytes);
  c10::SetCPUAllocator(new SharedAllocator(minBytes, s.original), kPriority);  // never freed: see Installed
}

void disableSharedCpuAllocator() {
  Installed& s = installed();
  std::lock_guard<std::mutex> lock(s.mutex);
  cache().setLimit(0);
  if (s.original == nullptr) return;
  c10::SetCPUAllocator(s.original, kPriority);
}

}  // namespace atoll_torch
