// The receiving side of pooled single copy: maps a peer process's shared-pool regions
// (base/shared_pool.h) read-only, so offers from them are read with plain loads.
//
// Why /proc/<pid>/fd: the peer's memfd can be opened there by the same user without the peer's
// help (SCM_RIGHTS would need a socket per link) and without ptrace attach rights (pidfd_getfd
// needs those, so Yama's ptrace_scope would refuse it). Whatever the path opens is checked by its
// name, "memfd:atoll-pool-<token>-<id>": a pid from another pid namespace, or a descriptor number
// the peer reused after ncclMemFree, names another file and is refused.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/status.h"

namespace atl::transport::shm {

class PeerPool {
 public:
  PeerPool() = default;
  PeerPool(const PeerPool&) = delete;
  PeerPool& operator=(const PeerPool&) = delete;
  ~PeerPool();

  /// Bytes [offset, offset + n) of region (token, id), the peer's descriptor `fd` in process `pid`.
  Result<const std::byte*> map(int pid, int fd, uint64_t token, uint64_t id, size_t offset, size_t n);
  /// Whether the peer's probe region (base/shared_pool.h, pool::probe) maps: then its regions will.
  bool canMap(int pid, int fd, uint64_t token, std::string* why);

 private:
  struct Mapping {
    uint64_t token, id;
    std::byte* base;
    size_t bytes;
  };
  // Regions a peer frees stay mapped here until evicted: a few, for the buffers an application
  // keeps reusing.
  static constexpr size_t kMaxMappings = 32;
  std::vector<Mapping> maps_;  // most recently used last
};

}  // namespace atl::transport::shm
