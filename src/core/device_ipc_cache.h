// Peers' device allocations mapped into this process (CUDA IPC, the emulator's memfds), kept
// across calls. Opening a CUDA IPC handle costs far more than a small all-reduce (it maps the
// allocation into this context), and a training loop all-reduces the same buffers every step, so
// the direct all-reduce (core/device_intranode.h) maps each peer allocation once.
//
// Entries are keyed by the allocation's identity as its handle carries it (exporter, allocation
// size, and the CUipcMemHandle, which differs for every allocation, or the emulator's nonce and
// serial) and the device whose context opened it, never by address: an allocation freed and another made at the same address is a new
// key, and the old entry is only memory held until it is evicted. One cache per process, so that
// two communicators never open the same handle twice (older drivers refuse that). At most
// ATOLL_DEVICE_IPC_CACHE entries not in use are kept; the least recently used are closed first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "device/device.h"

namespace atl {

class DeviceIpcCache {
 public:
  /// One use of a mapped allocation, opened in device `onDevice`'s context: the pointer
  /// corresponding to the exported one. Released by release() with the same arguments.
  Result<std::byte*> acquire(const device::Device& dev, const device::IpcHandle& handle, int onDevice);
  void release(const device::Device& dev, const device::IpcHandle& handle, int onDevice);

  /// importMemory calls made so far (tests check that repeated calls map nothing new).
  uint64_t imports() const;
  /// Entries mapped now.
  size_t mapped() const;

  static DeviceIpcCache& process();

 private:
  struct Entry {
    std::byte* base = nullptr;  // the allocation's start in this process
    int users = 0;
    std::list<std::string>::iterator lru;  // position in idle_ while users == 0
  };
  static std::string keyOf(const device::IpcHandle& handle, int onDevice);
  /// Closes idle entries beyond the limit, oldest first. Caller holds mu_.
  void trimLocked(const device::Device& dev);

  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;
  std::list<std::string> idle_;  // keys of entries without users, least recently used first
  uint64_t imports_ = 0;
};

}  // namespace atl
