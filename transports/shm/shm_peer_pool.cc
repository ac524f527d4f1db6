#include "transports/shm/shm_peer_pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "base/shared_pool.h"

namespace atl::transport::shm {
namespace {

/// Opens the peer's descriptor and checks it is region (token, id); -1 with `why` otherwise.
int openRegion(int pid, int fd, uint64_t token, uint64_t id, std::string* why) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int mine = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (mine < 0) {
    *why = "open(" + path + "): " + std::strerror(errno);
    return -1;
  }
  // Read the name through our own descriptor: the peer's number may be reused meanwhile.
  char link[256] = {};
  const std::string self = "/proc/self/fd/" + std::to_string(mine);
  const ssize_t len = ::readlink(self.c_str(), link, sizeof link - 1);
  const std::string want = "/memfd:" + pool::regionName(token, id);
  if (len < static_cast<ssize_t>(want.size()) || std::strncmp(link, want.c_str(), want.size()) != 0 ||
      (link[want.size()] != '\0' && link[want.size()] != ' ')) {
    *why = path + " is " + (len > 0 ? std::string(link) : "unreadable") + ", not " + want;
    ::close(mine);
    return -1;
  }
  return mine;
}

}  // namespace

PeerPool::~PeerPool() {
  for (const Mapping& m : maps_) ::munmap(m.base, m.bytes);
}

bool PeerPool::canMap(int pid, int fd, uint64_t token, std::string* why) {
  if (pid <= 0 || fd < 0 || token == 0) {
    *why = "the peer has no shared pool";
    return false;
  }
  const int mine = openRegion(pid, fd, token, 0, why);
  if (mine < 0) return false;
  void* p = ::mmap(nullptr, static_cast<size_t>(sysconf(_SC_PAGESIZE)), PROT_READ, MAP_SHARED, mine, 0);
  const int err = errno;
  ::close(mine);
  if (p == MAP_FAILED) {
    *why = std::string("mmap of the peer's probe region: ") + std::strerror(err);
    return false;
  }
  ::munmap(p, static_cast<size_t>(sysconf(_SC_PAGESIZE)));
  return true;
}

Result<const std::byte*> PeerPool::map(int pid, int fd, uint64_t token, uint64_t id, size_t offset, size_t n) {
  for (size_t i = 0; i < maps_.size(); ++i) {
    if (maps_[i].token != token || maps_[i].id != id) continue;
    const Mapping m = maps_[i];
    if (offset > m.bytes || n > m.bytes - offset)
      return ATOLL_ERROR(ncclInternalError, "shm: offer of %zu bytes at %zu lies outside the peer's %zu-byte region",
                         n, offset, m.bytes);
    if (i + 1 != maps_.size()) {
      maps_.erase(maps_.begin() + static_cast<ptrdiff_t>(i));
      maps_.push_back(m);
    }
    return static_cast<const std::byte*>(m.base + offset);
  }
  std::string why;
  const int mine = openRegion(pid, fd, token, id, &why);
  if (mine < 0) return ATOLL_ERROR(ncclRemoteError, "shm: cannot map the peer's offered buffer: %s", why.c_str());
  struct stat st{};
  void* p = MAP_FAILED;
  int err = 0;
  if (::fstat(mine, &st) == 0) {
    p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, mine, 0);
    err = errno;
  } else {
    err = errno;
  }
  ::close(mine);
  if (p == MAP_FAILED)
    return ATOLL_ERROR(ncclSystemError, "shm: mapping the peer's %lld-byte region failed: %s",
                       static_cast<long long>(st.st_size), std::strerror(err));
  if (maps_.size() == kMaxMappings) {
    ::munmap(maps_.front().base, maps_.front().bytes);
    maps_.erase(maps_.begin());
  }
  maps_.push_back(Mapping{token, id, static_cast<std::byte*>(p), static_cast<size_t>(st.st_size)});
  return map(pid, fd, token, id, offset, n);
}

}  // namespace atl::transport::shm
