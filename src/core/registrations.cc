#include "core/registrations.h"

#include <atomic>

namespace atl {
namespace {
std::atomic<uintptr_t> gNextHandle{1};  // 0 would read as a NULL handle
std::atomic<size_t> gLive{0};
}  // namespace

RegistrationTable::~RegistrationTable() { gLive.fetch_sub(entries_.size(), std::memory_order_relaxed); }

void* RegistrationTable::add(const void* buff, size_t size, int flags, uint64_t tag) {
  const uintptr_t id = gNextHandle.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.emplace(id, Entry{buff, size, flags, tag});
  gLive.fetch_add(1, std::memory_order_relaxed);
  return reinterpret_cast<void*>(id);
}

bool RegistrationTable::remove(void* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.erase(reinterpret_cast<uintptr_t>(handle)) == 0) return false;
  gLive.fetch_sub(1, std::memory_order_relaxed);
  return true;
}

bool RegistrationTable::find(const void* handle, Entry* out) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(reinterpret_cast<uintptr_t>(handle));
  if (it == entries_.end()) return false;
  *out = it->second;
  return true;
}

size_t RegistrationTable::liveCount() { return gLive.load(std::memory_order_relaxed); }

}  // namespace atl
