// Host memory that other processes on the host can map: what ncclMemAlloc hands out on the host
// backend, so shared-memory links move messages from it in a single copy (transports/shm/
// shm_direct.h), as NCCL's cuMem allocations with shareable handles do on GPUs.
//
// Why memfd regions: a peer maps the same pages through /proc/<pid>/fd/<fd> (allowed for the
// same user wherever /proc is; Yama's ptrace_scope does not restrict it, unlike process_vm_readv)
// and then reads them with plain loads, so reductions read the peer's buffer in place with no
// system call per piece. Each region's memfd is named after a random pool token and the region's
// id, so the peer can prove it opened the right file (a pid from another pid namespace, or a
// descriptor number reused after ncclMemFree, names some other file).
//
// Semantics that differ from malloc: the pages are MAP_SHARED, so a fork() child shares them
// with its parent instead of getting a copy (NCCL's cuMem memory is not usable after fork at all).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "base/status.h"

namespace atl::pool {

struct Region {
  uint64_t id = 0;        // never reused within a process
  uint64_t token = 0;     // the pool token when it was made (its memfd's name; a fork child keeps it)
  int fd = -1;            // the memfd; open as long as the region lives
  std::byte* base = nullptr;
  size_t bytes = 0;       // mapped size (a multiple of the page size)
};

/// A page-aligned region of at least `bytes` (one page for 0).
Result<void*> allocate(size_t bytes);
/// Unmaps and closes the region that starts at p; false when p is not a region's start.
bool release(void* p);
/// The region holding all of [p, p + n), if any.
std::optional<Region> find(const void* p, size_t n);
/// This process's pool token (random, drawn again after fork) and the memfd name of region `id`.
uint64_t token();
std::string regionName(uint64_t token, uint64_t id);
/// A one-page region with id 0 that peers map to learn whether they can map this process's
/// regions at all (transports/shm/shm_peer_pool.h). Shared by its holders (every shm ring end) and
/// closed with the last, so a process whose communicators are gone keeps no descriptor for it.
struct Probe {
  uint64_t token = 0;
  int fd = -1;  // -1: it could not be made
  int owner = 0;  // the pid that made it: a fork child inherits the object, not the right to close it
  Probe() = default;
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;
  ~Probe();
};
std::shared_ptr<const Probe> holdProbe();

}  // namespace atl::pool
