// The shared host-memory pool behind ncclMemAlloc (base/shared_pool.h) and the peer side that maps
// another process's regions (transports/shm/shm_peer_pool.h): real memfds, a real second process.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "base/shared_pool.h"
#include "base/status.h"
#include "transports/shm/shm_peer_pool.h"

namespace atl {
namespace {

TEST(SharedPool, RegionsArePageAlignedFoundAndReleasedOnce) {
  Result<void*> a = pool::allocate(10000);
  Result<void*> b = pool::allocate(0);
  ASSERT_TRUE(a.ok() && b.ok());
  auto* p = static_cast<std::byte*>(*a);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  std::memset(p, 0x5a, 10000);
  std::optional<pool::Region> whole = pool::find(p, 10000), inner = pool::find(p + 100, 50);
  ASSERT_TRUE(whole && inner);
  EXPECT_EQ(whole->id, inner->id);
  EXPECT_EQ(whole->base, p);
  EXPECT_GE(whole->bytes, 10000u);
  EXPECT_EQ(whole->token, pool::token());
  EXPECT_FALSE(pool::find(p + whole->bytes - 8, 16));  // runs past the region's end
  std::optional<pool::Region> below = pool::find(p - 1, 1);  // another region may sit right below
  EXPECT_TRUE(!below || below->id != whole->id);
  int local = 0;
  EXPECT_FALSE(pool::find(&local, sizeof local));
  std::optional<pool::Region> other = pool::find(*b, 1);
  ASSERT_TRUE(other);
  EXPECT_NE(other->id, whole->id);
  EXPECT_FALSE(pool::release(p + 4096));  // only a region's start releases it
  EXPECT_TRUE(pool::release(p));
  EXPECT_FALSE(pool::release(p));
  EXPECT_FALSE(pool::find(p, 1));
  EXPECT_TRUE(pool::release(*b));
}

TEST(SharedPool, AnImpossibleSizeFailsCleanly) {
  EXPECT_FALSE(pool::allocate(SIZE_MAX).ok());
  EXPECT_FALSE(pool::allocate(SIZE_MAX - 100).ok());
}

TEST(SharedPool, TheProbeIsSharedByItsHoldersAndClosedWithTheLast) {
  std::shared_ptr<const pool::Probe> first = pool::holdProbe(), second = pool::holdProbe();
  ASSERT_GE(first->fd, 0);
  EXPECT_EQ(first.get(), second.get());
  const int fd = first->fd;
  first.reset();
  EXPECT_NE(::fcntl(fd, F_GETFD), -1);
  second.reset();
  EXPECT_EQ(::fcntl(fd, F_GETFD), -1);  // no descriptor left behind once no ring holds it
}

/// A child process that owns one region filled with `fill` and tells the parent where it is.
struct Owner {
  pid_t pid = -1;
  pool::Region region;
  int releaseFd = -1;  // closing it lets the child exit

  static Owner start(unsigned char fill, size_t bytes) {
    int info[2], go[2];
    EXPECT_EQ(::pipe(info), 0);
    EXPECT_EQ(::pipe(go), 0);
    Owner o;
    o.pid = ::fork();
    if (o.pid == 0) {
      ::close(info[0]);
      ::close(go[1]);
      Result<void*> p = pool::allocate(bytes);
      if (!p.ok()) _exit(2);
      std::memset(*p, fill, bytes);
      pool::Region r = *pool::find(*p, bytes);
      if (::write(info[1], &r, sizeof r) != static_cast<ssize_t>(sizeof r)) _exit(3);
      char c;
      while (::read(go[0], &c, 1) > 0) {
      }
      _exit(0);
    }
    ::close(info[1]);
    ::close(go[0]);
    EXPECT_EQ(::read(info[0], &o.region, sizeof o.region), static_cast<ssize_t>(sizeof o.region));
    ::close(info[0]);
    o.releaseFd = go[1];
    return o;
  }
  void stop() {
    if (releaseFd >= 0) ::close(releaseFd);
    releaseFd = -1;
    int status = 0;
    if (pid > 0) ::waitpid(pid, &status, 0);
    pid = -1;
  }
};

TEST(PeerPool, MapsAnotherProcesssRegionAndReadsItInPlace) {
  Owner owner = Owner::start(0x3c, 3 * 4096 + 5);
  transport::shm::PeerPool peers;
  Result<const std::byte*> at = peers.map(owner.pid, owner.region.fd, owner.region.token, owner.region.id, 4096, 100);
  ASSERT_TRUE(at.ok()) << lastErrorMessage();
  for (size_t i = 0; i < 100; ++i) ASSERT_EQ((*at)[i], std::byte{0x3c});
  // The second look is the cached mapping; the pages stay readable after the owner exits.
  Result<const std::byte*> again = peers.map(owner.pid, owner.region.fd, owner.region.token, owner.region.id, 4096, 100);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *at);
  owner.stop();
  EXPECT_EQ((*at)[99], std::byte{0x3c});
}

TEST(PeerPool, RefusesWhatIsNotTheNamedRegion) {
  Owner owner = Owner::start(0x11, 4096);
  transport::shm::PeerPool peers;
  // Another id at the same descriptor: its name says it is not that region.
  Result<const std::byte*> wrongId = peers.map(owner.pid, owner.region.fd, owner.region.token, owner.region.id + 1, 0, 8);
  EXPECT_FALSE(wrongId.ok());
  EXPECT_NE(lastErrorMessage().find("not /memfd:atoll-pool-"), std::string::npos) << lastErrorMessage();
  // Another process's token (as a pid from another namespace would give).
  EXPECT_FALSE(peers.map(owner.pid, owner.region.fd, owner.region.token ^ 2, owner.region.id, 0, 8).ok());
  // A range outside the region.
  EXPECT_FALSE(peers.map(owner.pid, owner.region.fd, owner.region.token, owner.region.id, 4000, 200).ok());
  std::string why;
  EXPECT_FALSE(peers.canMap(owner.pid, 0, owner.region.token, &why));  // fd 0 is no probe region
  EXPECT_FALSE(why.empty());
  const pid_t gone = owner.pid;
  owner.stop();
  // An exited owner, for a region not mapped before it left: a clear error, not a crash.
  transport::shm::PeerPool fresh;
  Result<const std::byte*> late = fresh.map(gone, owner.region.fd, owner.region.token, owner.region.id, 0, 8);
  EXPECT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), ncclRemoteError);
}

TEST(PeerPool, TheProbeRegionOfAnotherProcessMaps) {
  int info[2], go[2];
  ASSERT_EQ(::pipe(info), 0);
  ASSERT_EQ(::pipe(go), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(info[0]);
    ::close(go[1]);
    std::shared_ptr<const pool::Probe> probe = pool::holdProbe();
    const uint64_t msg[2] = {probe->token, static_cast<uint64_t>(probe->fd)};
    if (::write(info[1], msg, sizeof msg) != static_cast<ssize_t>(sizeof msg)) _exit(3);
    char c;
    while (::read(go[0], &c, 1) > 0) {
    }
    _exit(0);
  }
  ::close(go[0]);
  ::close(info[1]);
  uint64_t msg[2] = {};
  ASSERT_EQ(::read(info[0], msg, sizeof msg), static_cast<ssize_t>(sizeof msg));
  transport::shm::PeerPool peers;
  std::string why;
  EXPECT_TRUE(peers.canMap(pid, static_cast<int>(msg[1]), msg[0], &why)) << why;
  EXPECT_NE(msg[0], pool::token());  // the child drew its own token after fork
  ::close(go[1]);
  ::waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace atl
