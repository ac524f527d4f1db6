#include "transports/shm/shm_ring.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <random>
#include <thread>
#include <utility>

#include "base/debug.h"
#include "base/fd_limit.h"
#include "base/shared_pool.h"

namespace atl::transport::shm {
namespace {

constexpr uint32_t kReadyMagic = 0x41544c52;  // "ATLR"
constexpr uint32_t kVersion = 5;  // 2: liveness by record locks, ends tagged with a process token; 3: single copy;
                                  // 4: small messages mirrored beside the head; 5: in head's line only

// Both ends map every page of the ring up front. Otherwise each end takes a page fault on every
// page the first time the stream passes it, for the ring's whole first lap: a 16 KiB all-reduce
// on 2 ranks took 13 us instead of 2 us for its first 80 or so calls (1 MiB rings), which is all
// a 20-iteration benchmark of a new size measures.
constexpr int kPopulate = MAP_POPULATE;

size_t pageSize() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

uint64_t headerBytes() { return (sizeof(RingHeader) + pageSize() - 1) / pageSize() * pageSize(); }

// Tells this process apart from every other one, in any pid namespace; drawn again in a forked
// child (which inherits the memory but is another process), so ranks run as threads share it.
// Drawn under a lock: two threads drawing at once would tag one process's ends differently, and a
// peer in this process would then look like another one whose lock is gone (F_GETLK does not see
// our own locks).
// At namespace scope, not in the function: its address is published (RingEnd::tokenAddr) so a
// peer can check it reads the right process's memory.
std::atomic<uint64_t> gToken{0};

uint64_t drawProcessToken() {
  static std::mutex drawing;
  std::atomic<uint64_t>& token = gToken;
  static std::atomic<pid_t> owner{0};
  const pid_t self = ::getpid();
  if (owner.load(std::memory_order_acquire) != self) {
    std::lock_guard<std::mutex> lock(drawing);
    if (owner.load(std::memory_order_relaxed) != self) {
      std::random_device rd;
      token.store((uint64_t{rd()} << 32 | rd()) | 1, std::memory_order_relaxed);
      owner.store(self, std::memory_order_release);
    }
  }
  return token.load(std::memory_order_relaxed);
}

// Byte of the ring file whose lock says "this end's process is alive".
off_t lockByte(bool creator) { return creator ? 0 : 1; }

// A POSIX record lock belongs to the process, is dropped by the kernel when the process exits
// (before it turns into a zombie, reaped or not), is never inherited by fork() children, and is
// seen through the shared file by a peer in any pid namespace.
Status holdLiveness(int fd, bool creator, const std::string& name) {
  struct flock lk{};
  lk.l_type = F_RDLCK;
  lk.l_whence = SEEK_SET;
  lk.l_start = lockByte(creator);
  lk.l_len = 1;
  if (::fcntl(fd, F_SETLK, &lk) != 0)
    return ATOLL_ERROR(ncclSystemError, "shm: cannot lock %s to publish liveness: %s", name.c_str(),
                       std::strerror(errno));
  return Status::Ok();
}

void recordSelf(RingEnd& end, const pool::Probe& probe) {
  end.token.store(drawProcessToken(), std::memory_order_relaxed);
  end.tokenAddr.store(reinterpret_cast<uintptr_t>(&gToken), std::memory_order_relaxed);
  end.poolToken.store(probe.token, std::memory_order_relaxed);
  end.poolProbeFd.store(probe.fd, std::memory_order_relaxed);
  end.pid.store(static_cast<int32_t>(::getpid()), std::memory_order_release);
}

}  // namespace

uint64_t Ring::processToken() { return drawProcessToken(); }

std::string ringName(uint64_t commHash, int from, int to, int channel) {
  char buf[96];
  std::snprintf(buf, sizeof(buf), "/atoll-%016llx-%d-%d-%d", static_cast<unsigned long long>(commHash), from, to,
                channel);
  return buf;
}

uint64_t Ring::roundCapacity(size_t requestedBytes) {
  uint64_t cap = kMinCapacity;
  while (cap < requestedBytes && cap < (1ull << 40)) cap <<= 1;
  return cap;
}

Result<Ring> Ring::create(const std::string& name, size_t requestedBytes) {
  const uint64_t capacity = roundCapacity(requestedBytes);
  const size_t total = headerBytes() + capacity;
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 && errno == EEXIST) {
    // Left over by a process that died before its peer attached; the hash makes a live clash unlikely.
    ATOLL_INFO(log::kShm, "shm: removing stale %s", name.c_str());
    ::shm_unlink(name.c_str());
    fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  }
  if (fd < 0)
    return ATOLL_ERROR(ncclSystemError, "shm_open(%s) failed: %s%s", name.c_str(), std::strerror(errno),
                       net::fdHint(errno).c_str());

  Ring ring;
  ring.name_ = name;
  ring.creator_ = true;
  auto fail = [&](const char* what, int err) {
    ::close(fd);
    ::shm_unlink(name.c_str());
    return ATOLL_ERROR(ncclSystemError, "shm %s of %s (%zu bytes) failed: %s%s", what, name.c_str(), total,
                       std::strerror(err), err == ENOSPC ? " (is /dev/shm large enough? see NCCL_BUFFSIZE)" : "");
  };
  if (::ftruncate(fd, static_cast<off_t>(total)) != 0) return fail("ftruncate", errno);
  // Reserve the pages now: tmpfs overcommits, and touching a page it cannot back raises SIGBUS later.
  if (int err = ::posix_fallocate(fd, 0, static_cast<off_t>(total)); err != 0) return fail("fallocate", err);
  void* base = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | kPopulate, fd, 0);
  if (base == MAP_FAILED) return fail("mmap", errno);
  if (Status st = holdLiveness(fd, true, name); !st.ok()) {
    ::munmap(base, total);
    ::close(fd);
    ::shm_unlink(name.c_str());
    return st;
  }

  ring.fd_ = fd;
  ring.base_ = base;
  ring.mapBytes_ = total;
  ring.header_ = new (base) RingHeader();
  ring.header_->version = kVersion;
  ring.header_->capacity = capacity;
  ring.header_->dataOffset = headerBytes();
  ring.data_ = static_cast<std::byte*>(base) + headerBytes();
  ring.capacity_ = capacity;
  ring.probe_ = pool::holdProbe();
  recordSelf(ring.header_->receiver, *ring.probe_);
  ring.header_->ready.store(kReadyMagic, std::memory_order_release);
  return ring;
}

Result<Ring> Ring::attach(const std::string& name, Deadline deadline, const AbortFlag* abort) {
  auto backoff = std::chrono::microseconds(200);
  for (;;) {
    if (aborted(abort)) return ATOLL_ERROR(ncclSystemError, "shm attach to %s aborted", name.c_str());
    int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
    if (fd < 0 && errno != ENOENT)
      return ATOLL_ERROR(ncclSystemError, "shm_open(%s) failed: %s%s", name.c_str(), std::strerror(errno),
                         net::fdHint(errno).c_str());
    if (fd >= 0) {
      struct stat st{};
      if (::fstat(fd, &st) != 0) {
        int err = errno;
        ::close(fd);
        return ATOLL_ERROR(ncclSystemError, "fstat(%s) failed: %s", name.c_str(), std::strerror(err));
      }
      const size_t size = static_cast<size_t>(st.st_size);
      if (size > headerBytes()) {  // 0 until the creator has sized it; the size is final after that
        void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED | kPopulate, fd, 0);
        if (base == MAP_FAILED) {
          int err = errno;
          ::close(fd);
          return ATOLL_ERROR(ncclSystemError, "mmap(%s) failed: %s", name.c_str(), std::strerror(err));
        }
        Ring ring;  // owns fd and mapping from here on
        ring.fd_ = fd;
        ring.name_ = name;
        ring.base_ = base;
        ring.mapBytes_ = size;
        ring.header_ = static_cast<RingHeader*>(base);
        while (ring.header_->ready.load(std::memory_order_acquire) != kReadyMagic) {
          if (deadline.expired() || aborted(abort))
            return ATOLL_ERROR(ncclSystemError, "shm ring %s was never initialised by its creator", name.c_str());
          std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
        const RingHeader* h = ring.header_;
        if (h->version != kVersion || h->dataOffset != headerBytes() || h->capacity < kMinCapacity ||
            (h->capacity & (h->capacity - 1)) != 0 || h->dataOffset + h->capacity != size)
          return ATOLL_ERROR(ncclInternalError, "shm ring %s has an incompatible header (version %u, capacity %llu)",
                             name.c_str(), h->version, static_cast<unsigned long long>(h->capacity));
        ring.capacity_ = h->capacity;
        ring.data_ = static_cast<std::byte*>(base) + h->dataOffset;
        ATOLL_CHECK(holdLiveness(fd, false, name));
        ring.probe_ = pool::holdProbe();
        recordSelf(ring.header_->sender, *ring.probe_);
        // Both ends are mapped now: the name has done its job.
        if (::shm_unlink(name.c_str()) != 0 && errno != ENOENT)
          ATOLL_WARN("shm_unlink(%s) failed: %s", name.c_str(), std::strerror(errno));
        ring.header_->unlinked.store(1, std::memory_order_release);
        return ring;
      }
      ::close(fd);
    }
    if (deadline.expired())
      return ATOLL_ERROR(ncclSystemError, "timed out waiting for shm ring %s (peer never created it)", name.c_str());
    std::this_thread::sleep_for(backoff);
    if (backoff < std::chrono::milliseconds(20)) backoff *= 2;
  }
}

Ring& Ring::operator=(Ring&& o) noexcept {
  if (this != &o) {
    release();
    name_ = std::move(o.name_);
    fd_ = std::exchange(o.fd_, -1);
    base_ = std::exchange(o.base_, nullptr);
    mapBytes_ = std::exchange(o.mapBytes_, 0);
    header_ = std::exchange(o.header_, nullptr);
    data_ = std::exchange(o.data_, nullptr);
    capacity_ = std::exchange(o.capacity_, 0);
    creator_ = std::exchange(o.creator_, false);
    probe_ = std::move(o.probe_);
  }
  return *this;
}

Ring::~Ring() { release(); }

void Ring::release() {
  dropLiveness();
  if (base_ == nullptr) return;
  if (creator_ && header_->unlinked.load(std::memory_order_acquire) == 0) {
    if (::shm_unlink(name_.c_str()) != 0 && errno != ENOENT)
      ATOLL_WARN("shm_unlink(%s) failed: %s", name_.c_str(), std::strerror(errno));
  }
  ::munmap(base_, mapBytes_);
  probe_.reset();
  base_ = nullptr;
  header_ = nullptr;
  data_ = nullptr;
}

void Ring::markClosed() {
  if (header_ != nullptr) self().closed.store(1, std::memory_order_release);
}

void Ring::dropLiveness() {
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
}

bool Ring::peerExited() const {
  if (fd_ < 0) return false;
  const RingEnd& end = other();
  // A peer in this very process (ranks as threads) shares our locks, so the probe cannot see it;
  // it cannot die without us either. Nor can an end that has not attached yet.
  const uint64_t token = end.token.load(std::memory_order_acquire);
  if (token == 0 || token == drawProcessToken()) return false;
  struct flock lk{};
  lk.l_type = F_WRLCK;
  lk.l_whence = SEEK_SET;
  lk.l_start = lockByte(!creator_);
  lk.l_len = 1;
  if (::fcntl(fd_, F_GETLK, &lk) != 0) return false;  // cannot tell: leave it to the progress timeout
  return lk.l_type == F_UNLCK;
}

}  // namespace atl::transport::shm
