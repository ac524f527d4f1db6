#include "base/shared_pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <map>
#include <mutex>
#include <random>

namespace atl::pool {
namespace {

struct Registry {
  std::mutex lock;
  std::weak_ptr<const Probe> probe;
  std::map<uintptr_t, Region> byBase;  // ordered: find() looks up the region below an address
  uint64_t lastId = 0;
  uint64_t token = 0;
  pid_t owner = 0;  // the process that drew the token
};

Registry& registry() {
  static Registry r;
  return r;
}

uint64_t tokenLocked(Registry& r) {
  if (r.owner != ::getpid()) {
    std::random_device rd;
    r.token = (uint64_t{rd()} << 32 | rd()) | 1;
    r.owner = ::getpid();
  }
  return r.token;
}

size_t pageSize() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

std::string regionName(uint64_t token, uint64_t id) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "atoll-pool-%016" PRIx64 "-%" PRIu64, token, id);
  return buf;
}

uint64_t token() {
  Registry& r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  return tokenLocked(r);
}

Result<void*> allocate(size_t bytes) {
  if (bytes > (SIZE_MAX >> 1))
    return ATOLL_ERROR(ncclSystemError, "shared allocation of %zu bytes: larger than any address space", bytes);
  const size_t rounded = std::max<size_t>(1, (bytes + pageSize() - 1) / pageSize()) * pageSize();
  Registry& r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  const uint64_t id = ++r.lastId, tok = tokenLocked(r);
  const std::string name = regionName(tok, id);
  const int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) return ATOLL_ERROR(ncclSystemError, "memfd_create(%s) failed: %s", name.c_str(), std::strerror(errno));
  auto fail = [&](const char* what, int err) {
    ::close(fd);
    return ATOLL_ERROR(ncclSystemError, "shared allocation of %zu bytes: %s failed: %s", bytes, what, std::strerror(err));
  };
  if (::ftruncate(fd, static_cast<off_t>(rounded)) != 0) return fail("ftruncate", errno);
  // Reserve the pages now: a memfd overcommits, and a page it cannot back would SIGBUS later.
  if (int err = ::posix_fallocate(fd, 0, static_cast<off_t>(rounded)); err != 0) return fail("fallocate", err);
  void* base = ::mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) return fail("mmap", errno);
  r.byBase[reinterpret_cast<uintptr_t>(base)] = Region{id, tok, fd, static_cast<std::byte*>(base), rounded};
  return base;
}

Probe::~Probe() {
  if (fd >= 0 && owner == ::getpid()) ::close(fd);
}

std::shared_ptr<const Probe> holdProbe() {
  Registry& r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  std::shared_ptr<const Probe> held = r.probe.lock();
  if (held && held->owner == ::getpid()) return held;
  auto made = std::make_shared<Probe>();
  made->owner = ::getpid();
  made->token = tokenLocked(r);
  made->fd = ::memfd_create(regionName(made->token, 0).c_str(), MFD_CLOEXEC);
  if (made->fd >= 0 && ::ftruncate(made->fd, static_cast<off_t>(pageSize())) != 0) {
    ::close(made->fd);
    made->fd = -1;
  }
  r.probe = made;
  return made;
}

bool release(void* p) {
  Registry& r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  auto it = r.byBase.find(reinterpret_cast<uintptr_t>(p));
  if (it == r.byBase.end()) return false;
  ::munmap(it->second.base, it->second.bytes);
  ::close(it->second.fd);
  r.byBase.erase(it);
  return true;
}

std::optional<Region> find(const void* p, size_t n) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  Registry& r = registry();
  std::lock_guard<std::mutex> hold(r.lock);
  auto it = r.byBase.upper_bound(at);
  if (it == r.byBase.begin()) return std::nullopt;
  --it;
  const Region& region = it->second;
  if (at - it->first > region.bytes || n > region.bytes - (at - it->first)) return std::nullopt;
  return region;
}

}  // namespace atl::pool
