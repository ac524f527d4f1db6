#include "core/device_ipc_cache.h"

#include <cstring>

#include "base/debug.h"
#include "base/params.h"

namespace atl {

std::string DeviceIpcCache::keyOf(const device::IpcHandle& handle, int onDevice) {
  device::IpcHandle whole = handle;
  whole.offset = 0;  // any pointer into the allocation shares its mapping
  std::string key(reinterpret_cast<const char*>(&whole), sizeof whole);
  key.append(reinterpret_cast<const char*>(&onDevice), sizeof onDevice);
  return key;
}

Result<std::byte*> DeviceIpcCache::acquire(const device::Device& dev, const device::IpcHandle& handle, int onDevice) {
  ATOLL_CHECK(device::validate(handle, dev));
  const std::string key = keyOf(handle, onDevice);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    device::IpcHandle whole = handle;
    whole.offset = 0;
    ATOLL_ASSIGN_OR_RETURN(void* base, dev.importMemory(whole));
    ++imports_;
    it = entries_.emplace(key, Entry{static_cast<std::byte*>(base), 0, idle_.end()}).first;
  } else if (it->second.users == 0) {
    idle_.erase(it->second.lru);
  }
  ++it->second.users;
  return it->second.base + handle.offset;
}

void DeviceIpcCache::release(const device::Device& dev, const device::IpcHandle& handle, int onDevice) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = entries_.find(keyOf(handle, onDevice));
  if (it == entries_.end() || it->second.users == 0) return;
  if (--it->second.users == 0) it->second.lru = idle_.insert(idle_.end(), it->first);
  trimLocked(dev);
}

void DeviceIpcCache::trimLocked(const device::Device& dev) {
  const int64_t limit = std::max<int64_t>(0, params::getInt(params::Id::DeviceIpcCache));
  while (static_cast<int64_t>(idle_.size()) > limit) {
    auto it = entries_.find(idle_.front());
    idle_.pop_front();
    if (it == entries_.end()) continue;
    Status closed = dev.closeImported(it->second.base);
    if (!closed.ok()) ATOLL_INFO(log::kP2p, "closing a peer's device mapping failed: %s", lastErrorMessage().c_str());
    entries_.erase(it);
  }
}

uint64_t DeviceIpcCache::imports() const {
  std::lock_guard<std::mutex> lock(mu_);
  return imports_;
}

size_t DeviceIpcCache::mapped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

DeviceIpcCache& DeviceIpcCache::process() {
  // Never destroyed: proxy threads of communicators leaked at exit may still release into it.
  static DeviceIpcCache* cache = new DeviceIpcCache;
  return *cache;
}

}  // namespace atl
