// Bootstrap rendezvous, messaging, hostile clients, NCCL_COMM_ID mode, and the socket/HMAC helpers.
#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/hmac.h"
#include "base/params.h"
#include "base/socket.h"
#include "bootstrap/bootstrap.h"
#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "core/fault_notice.h"

namespace atl {
namespace {

using bootstrap::Bootstrap;

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = getenv(name);
    if (old != nullptr) old_ = old, hadOld_ = true;
    setenv(name, value, 1);
    params::reloadForTesting();
  }
  ~ScopedEnv() {
    if (hadOld_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
    params::reloadForTesting();
  }

 private:
  const char* name_;
  std::string old_;
  bool hadOld_ = false;
};

int countFds() {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == nullptr) return -1;
  while (readdir(d) != nullptr) ++n;
  closedir(d);
  return n;
}

double secondsSince(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

std::vector<std::byte> infoFor(int rank, size_t size) {
  std::vector<std::byte> v(size);
  for (size_t i = 0; i < size; ++i) v[i] = static_cast<std::byte>((rank * 31 + i * 7) & 0xff);
  return v;
}

ncclUniqueId freshId() {
  auto id = bootstrap::generateUniqueId(/*ignoreCommIdEnv=*/true);
  EXPECT_TRUE(id.ok());
  return *id;
}

struct RankResult {
  ncclResult_t code = ncclInternalError;
  std::string error;
};

// Runs body(rank, bootstrap) on one thread per rank; `ranks`/`sizes` let tests lie about identity.
std::vector<RankResult> runRanks(const ncclUniqueId& id, std::vector<int> ranks, std::vector<int> sizes,
                                 std::function<void(int, Bootstrap&)> body, size_t infoSize = 64) {
  std::vector<RankResult> out(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] {
      auto info = infoFor(ranks[i], infoSize);
      auto b = Bootstrap::create(id, ranks[i], sizes[i], info, nullptr);
      out[i].code = b.status().code();
      if (!b.ok()) {
        out[i].error = lastErrorMessage();
        return;
      }
      if (body) body(ranks[i], **b);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

std::vector<RankResult> runJob(const ncclUniqueId& id, int n, std::function<void(int, Bootstrap&)> body,
                               size_t infoSize = 64) {
  std::vector<int> ranks, sizes;
  for (int r = 0; r < n; ++r) ranks.push_back(r), sizes.push_back(n);
  return runRanks(id, ranks, sizes, std::move(body), infoSize);
}

std::vector<std::byte> pattern(int from, int to, uint32_t tag, size_t n) {
  std::vector<std::byte> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>((from * 13 + to * 5 + tag * 3 + i) & 0xff);
  return v;
}

// Full exercise of one communicator, with EXPECTs from the rank threads.
void exercise(int rank, Bootstrap& b) {
  const int n = b.nranks();
  EXPECT_EQ(b.rank(), rank);
  for (int r = 0; r < n; ++r) {
    auto want = infoFor(r, 64);
    auto got = b.peerInfo(r);
    ASSERT_EQ(got.size(), want.size());
    EXPECT_EQ(0, memcmp(got.data(), want.data(), want.size())) << "info of rank " << r;
  }
  for (size_t per : {size_t(1), size_t(13), size_t(5000)}) {
    std::vector<std::byte> all(per * n);
    for (size_t i = 0; i < per; ++i) all[rank * per + i] = static_cast<std::byte>((rank + i) & 0xff);
    ASSERT_TRUE(b.allGather(all, per).ok());
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < per; ++i)
        ASSERT_EQ(all[r * per + i], static_cast<std::byte>((r + i) & 0xff)) << "slot " << r << " per " << per;
  }
  // Every rank sends three tags to every peer (itself included), then receives them in another order.
  for (int p = 0; p < n; ++p)
    for (uint32_t tag : {1u, 2u, 3u}) ASSERT_TRUE(b.send(p, tag, pattern(rank, p, tag, 100 + tag * p)).ok());
  for (int k = n - 1; k >= 0; --k) {
    int p = (rank + k) % n;
    for (uint32_t tag : {3u, 1u, 2u}) {
      std::vector<std::byte> got(100 + tag * rank);
      ASSERT_TRUE(b.recv(p, tag, got).ok()) << "from " << p << " tag " << tag;
      EXPECT_EQ(got, pattern(p, rank, tag, got.size()));
    }
  }
  EXPECT_TRUE(b.barrier().ok());
  EXPECT_EQ(b.send(0, 0xFFFFFFFFu, {}).code(), ncclInvalidArgument);
}

class BootstrapRanks : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapRanks, RendezvousAndMessaging) {
  const int n = GetParam();
  ncclUniqueId id = freshId();
  EXPECT_TRUE(bootstrap::isValidUniqueId(id));
  std::vector<uint64_t> hashes(n);
  auto res = runJob(id, n, [&](int r, Bootstrap& b) {
    hashes[r] = b.commHash();
    exercise(r, b);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(res[r].code, ncclSuccess) << "rank " << r << ": " << res[r].error;
    EXPECT_EQ(hashes[r], hashes[0]);
  }
}
INSTANTIATE_TEST_SUITE_P(Sizes, BootstrapRanks, ::testing::Values(1, 2, 5, 8));

int countThreads() {
  int n = 0;
  DIR* d = opendir("/proc/self/task");
  if (d == nullptr) return -1;
  while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
  closedir(d);
  return n;
}

TEST(Bootstrap, MultiProcess) {
  // Forking a multi-threaded process is unsafe (and TSan refuses); ctest runs each test alone.
  if (countThreads() != 1) GTEST_SKIP() << "other threads are running (e.g. --gtest_repeat); run this test alone";
  constexpr int kRanks = 3;
  int pipes[kRanks][2];
  pid_t pids[kRanks];
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_EQ(pipe(pipes[r]), 0);
    pids[r] = fork();
    ASSERT_GE(pids[r], 0);
    if (pids[r] == 0) {
      close(pipes[r][1]);
      ncclUniqueId id;
      pollfd p{pipes[r][0], POLLIN, 0};
      if (poll(&p, 1, 10000) != 1 || read(pipes[r][0], &id, sizeof(id)) != sizeof(id)) _exit(2);
      auto info = infoFor(r, 64);
      auto b = Bootstrap::create(id, r, kRanks, info, nullptr);
      if (!b.ok()) _exit(3);
      std::vector<std::byte> all(kRanks * 8);
      all[r * 8] = static_cast<std::byte>(r + 1);
      if (!(*b)->allGather(all, 8).ok()) _exit(4);
      for (int q = 0; q < kRanks; ++q)
        if (all[q * 8] != static_cast<std::byte>(q + 1)) _exit(5);
      if (!(*b)->barrier().ok()) _exit(6);
      _exit(0);
    }
    close(pipes[r][0]);
  }
  // Only now, with every child forked, does the root thread start (in this non-rank process).
  ncclUniqueId id = freshId();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(write(pipes[r][1], &id, sizeof(id)), static_cast<ssize_t>(sizeof(id)));
    close(pipes[r][1]);
  }
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < kRanks; ++r) {
    int st = -1;
    while (waitpid(pids[r], &st, WNOHANG) == 0) {
      if (secondsSince(start) > 20) {
        kill(pids[r], SIGKILL);
        waitpid(pids[r], &st, 0);
        ADD_FAILURE() << "child " << r << " hung";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child " << r << " status " << st;
  }
}

uint16_t freePort() {
  auto lo = net::parseHostPort("127.0.0.1:0");
  EXPECT_TRUE(lo.ok());
  net::SockAddr bound;
  auto fd = net::listenOn(*lo, 1, &bound);
  EXPECT_TRUE(fd.ok());
  return bound.port();  // closed on return; the kernel will not hand it out again right away
}

// Copies bytes both ways between two sockets until either side closes; with `flipAt` >= 0, the
// byte at that offset of what b sends to a is altered on the way.
void forward(int a, int b, long flipAt = -1) {
  long fromB = 0;
  pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
  char buf[4096];
  for (;;) {
    if (poll(fds, 2, 5000) <= 0) return;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].revents == 0) continue;
      ssize_t n = ::recv(fds[i].fd, buf, sizeof buf, 0);
      if (n <= 0) return;
      if (i == 1) {
        if (flipAt >= fromB && flipAt < fromB + n) buf[flipAt - fromB] ^= 0x20;
        fromB += n;
      }
      if (::send(fds[1 - i].fd, buf, static_cast<size_t>(n), MSG_NOSIGNAL) != n) return;
    }
  }
}

/// A proxy in front of a fresh root: closes the first `drop` connections at once, then forwards
/// `forward` more, altering the byte at `flipAt` of what the root sends back (-1: none).
class RootProxy {
 public:
  RootProxy(int drop, int forwardCount, long flipAt) {
    bootstrap::IdLayout l = bootstrap::decodeId(freshId());
    root_ = net::unpack(l.root);
    auto lo = net::parseHostPort("127.0.0.1:0");
    EXPECT_TRUE(lo.ok());
    net::SockAddr addr;
    auto fd = net::listenOn(*lo, 16, &addr);
    EXPECT_TRUE(fd.ok());
    listen_ = std::move(*fd);
    l.root = net::pack(addr);
    id_ = bootstrap::encodeId(l);
    server_ = std::thread([this, drop, forwardCount, flipAt] {
      std::vector<std::thread> pipes;
      for (int i = 0; i < drop + forwardCount; ++i) {
        auto c = net::acceptOne(listen_.get(), Deadline::afterMs(10000), nullptr);
        if (!c.ok()) break;
        if (i < drop) {
          ++dropped_;
          continue;  // closed here
        }
        pipes.emplace_back([this, fd = std::move(*c), flipAt]() mutable {
          auto up = net::connectTo(root_, Deadline::afterMs(2000), nullptr);
          if (up.ok()) forward(fd.get(), up->get(), flipAt);
        });
      }
      for (std::thread& t : pipes) t.join();
    });
  }
  ~RootProxy() { server_.join(); }
  const ncclUniqueId& id() const { return id_; }
  int dropped() const { return dropped_.load(); }

 private:
  net::SockAddr root_;
  net::Fd listen_;
  ncclUniqueId id_{};
  std::atomic<int> dropped_{0};
  std::thread server_;
};

/// Two ranks join through `id`; each one's status and (thread-local) last error.
std::vector<std::pair<Status, std::string>> joinTwo(const ncclUniqueId& id) {
  std::vector<std::pair<Status, std::string>> out(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r)
    ranks.emplace_back([&, r] {
      auto info = infoFor(r, 32);
      out[r].first = Bootstrap::create(id, r, 2, info, nullptr).status();
      out[r].second = lastErrorMessage();
    });
  for (std::thread& t : ranks) t.join();
  return out;
}

TEST(Bootstrap, AlteredRootReplyIsRejected) {
  // A proxy flips one byte inside the root's reply (past its header, in the partner addresses):
  // both ranks must fail at once with an authentication error, not use the address or hang.
  // The root's nonce (32 bytes), then its reply header (20), then the entries.
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::pair<Status, std::string>> res;
  {
    RootProxy proxy(0, 2, 32 + sizeof(bootstrap::wire::ReplyHeader) + 9);
    res = joinTwo(proxy.id());
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(res[r].first.code(), ncclSystemError) << "rank " << r;
    EXPECT_NE(res[r].second.find("failed authentication"), std::string::npos) << res[r].second;
  }
}

TEST(Bootstrap, AlteredMessagePayloadIsRejected) {
  // A message whose header proof is right but one payload byte changed after its MAC was made:
  // the listener answers NAK and queues nothing; the unaltered message is queued.
  ncclUniqueId id = freshId();
  const bootstrap::IdLayout l = bootstrap::decodeId(id);
  Secret secret;
  std::memcpy(secret.data(), l.secret, secret.size());
  auto info = infoFor(0, 16);
  auto bs = Bootstrap::create(id, 0, 1, info, nullptr);
  ASSERT_TRUE(bs.ok());
  auto sendOne = [&](bool alter) -> uint8_t {
    auto fd = net::connectTo((*bs)->listenAddress(), Deadline::afterMs(2000), nullptr);
    EXPECT_TRUE(fd.ok());
    bootstrap::wire::Nonce nonce;
    EXPECT_TRUE(net::recvAll(fd->get(), nonce.data(), nonce.size(), Deadline::afterMs(2000), nullptr).ok());
    bootstrap::wire::MsgHeader h{};
    h.magic = bootstrap::wire::kMsgMagic;
    h.from = 0;
    h.tag = 5;
    h.version = bootstrap::wire::kVersion;
    h.len = 8;
    Digest p = bootstrap::wire::msgProof(secret, nonce, h);
    memcpy(h.proof, p.data(), p.size());
    uint8_t payload[8] = {'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'};
    Digest mac = bootstrap::wire::bodyMac(secret, bootstrap::wire::kMacMessage, nonce,
                                          {reinterpret_cast<const uint8_t*>(&h), sizeof(h)}, payload);
    if (alter) payload[3] ^= 1;
    EXPECT_TRUE(net::sendAll(fd->get(), &h, sizeof(h), Deadline::afterMs(2000), nullptr).ok());
    EXPECT_TRUE(net::sendAll(fd->get(), payload, sizeof(payload), Deadline::afterMs(2000), nullptr).ok());
    EXPECT_TRUE(net::sendAll(fd->get(), mac.data(), mac.size(), Deadline::afterMs(2000), nullptr).ok());
    uint8_t answer = 0;
    EXPECT_TRUE(net::recvAll(fd->get(), &answer, 1, Deadline::afterMs(2000), nullptr).ok());
    return answer;
  };
  EXPECT_EQ(sendOne(true), bootstrap::wire::kNak);
  EXPECT_FALSE((*bs)->tryRecv(0, 5, 200).has_value());
  EXPECT_EQ(sendOne(false), bootstrap::wire::kAck);
  auto got = (*bs)->tryRecv(0, 5, 2000);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->size(), 8u);
}

TEST(Bootstrap, JoinRetriesWhenTheRootDropsItBeforeTheChallenge) {
  // A proxy in front of the root closes the first connections at once, as an overloaded root
  // would: the ranks must retry and join, not fail.
  std::vector<std::pair<Status, std::string>> res;
  int dropped = 0;
  {
    RootProxy proxy(3, 2, -1);  // 3 dropped, then one forwarded join per rank
    res = joinTwo(proxy.id());
    dropped = proxy.dropped();
  }
  EXPECT_EQ(dropped, 3);
  EXPECT_EQ(res[0].first.code(), ncclSuccess);
  EXPECT_EQ(res[1].first.code(), ncclSuccess);
}

TEST(Bootstrap, CommIdMode) {
  std::string commId = "127.0.0.1:" + std::to_string(freePort());
  ScopedEnv env("NCCL_COMM_ID", commId.c_str());
  auto a = bootstrap::generateUniqueId();
  auto b = bootstrap::generateUniqueId();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(0, memcmp(&*a, &*b, sizeof(ncclUniqueId))) << "every process must compute the same id";
  auto decoded = bootstrap::decodeId(*a);
  EXPECT_EQ(net::unpack(decoded.root).toString(), commId);
  {
    ScopedEnv secret("ATOLL_BOOTSTRAP_SECRET", "s3cret");
    auto c = bootstrap::generateUniqueId();
    ASSERT_TRUE(c.ok());
    EXPECT_NE(0, memcmp(bootstrap::decodeId(*c).secret, decoded.secret, 32));
    // The same secret from a file gives the same id; both at once is refused.
    char path[] = "/tmp/atoll-secret-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "s3cret\n", 7), 7);
    close(fd);
    {
      ScopedEnv file("ATOLL_BOOTSTRAP_SECRET_FILE", path);
      EXPECT_EQ(bootstrap::generateUniqueId().status().code(), ncclInvalidUsage) << "both set";
    }
    {
      ScopedEnv none("ATOLL_BOOTSTRAP_SECRET", "");
      ScopedEnv file("ATOLL_BOOTSTRAP_SECRET_FILE", path);
      auto f = bootstrap::generateUniqueId();
      ASSERT_TRUE(f.ok());
      EXPECT_EQ(0, memcmp(bootstrap::decodeId(*f).secret, bootstrap::decodeId(*c).secret, 32));
    }
    unlink(path);
    {
      ScopedEnv none("ATOLL_BOOTSTRAP_SECRET", "");
      ScopedEnv file("ATOLL_BOOTSTRAP_SECRET_FILE", path);
      EXPECT_EQ(bootstrap::generateUniqueId().status().code(), ncclInvalidUsage) << "unreadable file";
    }
  }
  // No root runs yet: nothing listens at the address until rank 0 joins.
  auto fd = net::connectTo(net::unpack(decoded.root), Deadline::afterMs(100), nullptr);
  EXPECT_FALSE(fd.ok());
  // Ranks compute the id themselves; rank 0 joins last to show the others wait for its root.
  std::vector<RankResult> res(3);
  std::vector<std::thread> ts;
  for (int r = 0; r < 3; ++r) {
    ts.emplace_back([&, r] {
      if (r == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      auto id = bootstrap::generateUniqueId();
      if (!id.ok()) return;
      auto info = infoFor(r, 64);
      auto bs = Bootstrap::create(*id, r, 3, info, nullptr);
      res[r].code = bs.status().code();
      if (bs.ok()) exercise(r, **bs);
    });
  }
  for (auto& t : ts) t.join();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(res[r].code, ncclSuccess) << "rank " << r;
}

TEST(Bootstrap, MismatchedNranksFailsEveryRank) {
  ScopedEnv env("ATOLL_BOOTSTRAP_TIMEOUT_MS", "20000");
  ncclUniqueId id = freshId();
  auto start = std::chrono::steady_clock::now();
  auto res = runRanks(id, {0, 1, 2}, {3, 3, 4}, nullptr);
  EXPECT_LT(secondsSince(start), 5.0);
  for (auto& r : res) {
    EXPECT_EQ(r.code, ncclInvalidUsage);
    EXPECT_NE(r.error.find("nranks="), std::string::npos) << r.error;
  }
}

TEST(Bootstrap, DuplicateRankFails) {
  ScopedEnv env("ATOLL_BOOTSTRAP_TIMEOUT_MS", "20000");
  ncclUniqueId id = freshId();
  auto start = std::chrono::steady_clock::now();
  auto res = runRanks(id, {0, 1, 1}, {3, 3, 3}, nullptr);
  EXPECT_LT(secondsSince(start), 5.0);
  for (auto& r : res) {
    EXPECT_EQ(r.code, ncclInvalidUsage);
    EXPECT_NE(r.error.find("twice"), std::string::npos) << r.error;
  }
}

TEST(Bootstrap, MismatchedInfoSizeFails) {
  ScopedEnv env("ATOLL_BOOTSTRAP_TIMEOUT_MS", "20000");
  ncclUniqueId id = freshId();
  std::vector<RankResult> res(2);
  std::thread t0([&] {
    auto info = infoFor(0, 8);
    res[0].code = Bootstrap::create(id, 0, 2, info, nullptr).status().code();
  });
  std::thread t1([&] {
    auto info = infoFor(1, 16);
    res[1].code = Bootstrap::create(id, 1, 2, info, nullptr).status().code();
  });
  t0.join();
  t1.join();
  EXPECT_EQ(res[0].code, ncclInvalidUsage);
  EXPECT_EQ(res[1].code, ncclInvalidUsage);
}

// Speaks the join protocol by hand so tests can get every field wrong.
void hostileJoin(const net::SockAddr& root, const Secret& secret, int32_t rank, int32_t nranks, uint32_t infoSize,
                 size_t sendBytes, bool closeEarly) {
  auto fd = net::connectTo(root, Deadline::afterMs(2000), nullptr);
  ASSERT_TRUE(fd.ok());
  bootstrap::wire::Nonce nonce;
  ASSERT_TRUE(net::recvAll(fd->get(), nonce.data(), nonce.size(), Deadline::afterMs(2000), nullptr).ok());
  bootstrap::wire::JoinHeader h{};
  h.magic = bootstrap::wire::kJoinMagic;
  h.version = bootstrap::wire::kVersion;
  h.rank = rank;
  h.nranks = nranks;
  h.infoSize = infoSize;
  Digest p = bootstrap::wire::joinProof(secret, nonce, h);
  memcpy(h.proof, p.data(), p.size());
  std::vector<uint8_t> bytes(sizeof(h) + infoSize, 0);
  memcpy(bytes.data(), &h, sizeof(h));
  (void)net::sendAll(fd->get(), bytes.data(), std::min(sendBytes, bytes.size()), Deadline::afterMs(2000), nullptr);
  if (!closeEarly) {
    // The root must drop us rather than accept: expect EOF (or a reset) without any reply.
    uint8_t b;
    Status s = net::recvAll(fd->get(), &b, 1, Deadline::afterMs(3000), nullptr);
    EXPECT_EQ(s.code(), ncclRemoteError);
  }
}

TEST(Bootstrap, HostileClientsDoNotDisturbRendezvous) {
  ncclUniqueId id = freshId();
  auto layout = bootstrap::decodeId(id);
  net::SockAddr root = net::unpack(layout.root);
  Secret good;
  memcpy(good.data(), layout.secret, 32);
  Secret bad = good;
  bad[0] ^= 1;

  // A silent client holds a connection open for the whole rendezvous.
  auto silent = net::connectTo(root, Deadline::afterMs(2000), nullptr);
  ASSERT_TRUE(silent.ok());
  std::vector<std::thread> hostile;
  hostile.emplace_back([&] { hostileJoin(root, bad, 0, 4, 64, 1 << 20, false); });          // wrong secret
  hostile.emplace_back([&] { hostileJoin(root, good, 1, 4, 1 << 20, 200, false); });       // oversized info
  hostile.emplace_back([&] { hostileJoin(root, good, 1, 4, 64, 10, true); });              // truncated header
  hostile.emplace_back([&] { hostileJoin(root, good, 5, 4, 64, 1 << 20, false); });        // rank out of range
  hostile.emplace_back([&] {                                                               // garbage
    auto fd = net::connectTo(root, Deadline::afterMs(2000), nullptr);
    ASSERT_TRUE(fd.ok());
    std::vector<uint8_t> junk(300);
    randomBytes(junk);
    (void)net::sendAll(fd->get(), junk.data(), junk.size(), Deadline::afterMs(2000), nullptr);
    uint8_t buf[64];
    Status s = net::recvAll(fd->get(), buf, sizeof(buf), Deadline::afterMs(3000), nullptr);  // nonce then EOF
    EXPECT_EQ(s.code(), ncclRemoteError);
  });
  for (auto& t : hostile) t.join();

  auto start = std::chrono::steady_clock::now();
  auto res = runJob(id, 4, exercise);
  // Well under the per-connection handshake timeout: the silent client blocked nobody.
  EXPECT_LT(secondsSince(start), 4.0);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(res[r].code, ncclSuccess) << "rank " << r << ": " << res[r].error;
}

TEST(Bootstrap, MissingRankTimesOut) {
  ScopedEnv env("ATOLL_BOOTSTRAP_TIMEOUT_MS", "500");
  ncclUniqueId id = freshId();
  auto start = std::chrono::steady_clock::now();
  auto res = runRanks(id, {0}, {2}, nullptr);
  EXPECT_LT(secondsSince(start), 4.0);
  EXPECT_EQ(res[0].code, ncclSystemError);
  EXPECT_NE(res[0].error.find("missing 1"), std::string::npos) << res[0].error;
}

TEST(Bootstrap, AbortStopsJoin) {
  ScopedEnv env("ATOLL_BOOTSTRAP_TIMEOUT_MS", "1500");  // lets the root thread go soon after
  ncclUniqueId id = freshId();
  AbortFlag abort{false};
  std::thread setter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    abort.store(true);
  });
  auto start = std::chrono::steady_clock::now();
  auto info = infoFor(0, 8);
  auto b = Bootstrap::create(id, 0, 2, info, &abort);
  setter.join();
  EXPECT_EQ(b.status().code(), ncclSystemError);
  EXPECT_LT(secondsSince(start), 2.0);
}

TEST(Bootstrap, InvalidArguments) {
  ncclUniqueId junk;
  memset(&junk, 0, sizeof(junk));
  EXPECT_FALSE(bootstrap::isValidUniqueId(junk));
  auto info = infoFor(0, 8);
  EXPECT_EQ(Bootstrap::create(junk, 0, 1, info, nullptr).status().code(), ncclInvalidArgument);
  ncclUniqueId id = freshId();
  EXPECT_EQ(Bootstrap::create(id, 2, 2, info, nullptr).status().code(), ncclInvalidArgument);
  std::vector<std::byte> big(5000);
  EXPECT_EQ(Bootstrap::create(id, 0, 1, big, nullptr).status().code(), ncclInvalidArgument);
  // The id is still good for a real job after those rejected attempts.
  auto res = runJob(id, 1, exercise);
  EXPECT_EQ(res[0].code, ncclSuccess);
}

TEST(Bootstrap, NoFdLeak) {
  int before = countFds();
  for (int round = 0; round < 2; ++round) {
    ncclUniqueId id = freshId();
    auto res = runJob(id, 4, exercise);
    for (auto& r : res) EXPECT_EQ(r.code, ncclSuccess);
  }
  // The root threads close their sockets right after handing out the table.
  auto start = std::chrono::steady_clock::now();
  // (Roots left over from earlier tests in this process may exit meanwhile, hence <=.)
  while (countFds() > before && secondsSince(start) < 3) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_LE(countFds(), before);
}

TEST(Socket, InterfaceSelection) {
  std::string name;
  auto lo = net::findInterfaceAddress("lo", &name);
  ASSERT_TRUE(lo.ok());
  EXPECT_EQ(name, "lo");
  EXPECT_EQ(lo->toString(), "127.0.0.1:0");
  auto exact = net::findInterfaceAddress("=lo", &name);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(name, "lo");
  EXPECT_FALSE(net::findInterfaceAddress("=l").ok());
  auto notLo = net::findInterfaceAddress("^lo", &name);
  if (notLo.ok()) {
    EXPECT_NE(name, "lo");
  }
  auto notLoExact = net::findInterfaceAddress("^=lo,docker0", &name);
  if (notLoExact.ok()) {
    EXPECT_NE(name, "lo");
  }
  auto bad = net::findInterfaceAddress("=nonexistent", &name);
  EXPECT_EQ(bad.status().code(), ncclInvalidUsage);
  EXPECT_NE(lastErrorMessage().find("nonexistent"), std::string::npos);
  auto def = net::findInterfaceAddress("", &name);
  ASSERT_TRUE(def.ok());
  EXPECT_FALSE(name.empty());
}

TEST(Socket, ParseHostPort) {
  auto a = net::parseHostPort("127.0.0.1:1234");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->toString(), "127.0.0.1:1234");
  EXPECT_EQ(a->port(), 1234);
  auto b = net::parseHostPort("[::1]:80");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->toString(), "[::1]:80");
  auto c = net::parseHostPort("localhost:5");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port(), 5);
  for (const char* badText : {"nope", "1.2.3.4:", "1.2.3.4:99999", "1.2.3.4:12x", "[::1]80", ":80", "[::1"})
    EXPECT_FALSE(net::parseHostPort(badText).ok()) << badText;
  net::SockAddr round = net::unpack(net::pack(*b));
  EXPECT_EQ(round.toString(), "[::1]:80");
}

TEST(Socket, DeadlinesAbortAndEof) {
  auto addr = net::parseHostPort("127.0.0.1:0");
  ASSERT_TRUE(addr.ok());
  net::SockAddr bound;
  auto listener = net::listenOn(*addr, 4, &bound);
  ASSERT_TRUE(listener.ok());
  // Accept with nothing arriving: times out.
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(net::acceptOne(listener->get(), Deadline::afterMs(150), nullptr).status().code(), ncclSystemError);
  EXPECT_LT(secondsSince(start), 1.0);
  // Abort flag already set: fails immediately.
  AbortFlag abort{true};
  EXPECT_EQ(net::acceptOne(listener->get(), Deadline::never(), &abort).status().code(), ncclSystemError);
  // EOF mid-receive names the peer.
  auto client = net::connectTo(bound, Deadline::afterMs(1000), nullptr);
  ASSERT_TRUE(client.ok());
  net::SockAddr peer;
  auto server = net::acceptOne(listener->get(), Deadline::afterMs(1000), nullptr, &peer);
  ASSERT_TRUE(server.ok());
  EXPECT_TRUE(net::sendAll(client->get(), "hi", 2, Deadline::afterMs(1000), nullptr).ok());
  client->reset();
  char buf[8];
  Status s = net::recvAll(server->get(), buf, sizeof(buf), Deadline::afterMs(1000), nullptr);
  EXPECT_EQ(s.code(), ncclRemoteError);
  EXPECT_NE(lastErrorMessage().find("127.0.0.1"), std::string::npos) << lastErrorMessage();
  // Sending into a closed connection must not raise SIGPIPE.
  std::vector<uint8_t> big(1 << 20);
  Status w = net::sendAll(server->get(), big.data(), big.size(), Deadline::afterMs(1000), nullptr);
  EXPECT_FALSE(w.ok());
  // Connecting to a closed port keeps retrying until the deadline.
  uint16_t port = bound.port();
  listener->reset();
  net::SockAddr gone = bound;
  gone.setPort(port);
  start = std::chrono::steady_clock::now();
  EXPECT_EQ(net::connectTo(gone, Deadline::afterMs(300), nullptr).status().code(), ncclSystemError);
  EXPECT_GE(secondsSince(start), 0.25);
  EXPECT_LT(secondsSince(start), 2.0);
  // Unless told not to retry: a peer that has exited is an error at once.
  start = std::chrono::steady_clock::now();
  EXPECT_EQ(net::connectTo(gone, Deadline::afterMs(5000), nullptr, net::ConnectRetry::Never).status().code(),
            ncclSystemError);
  EXPECT_LT(secondsSince(start), 1.0);
}

// The failure-notice path (core/fault_notice.h): a bounded send that ignores the abort flag, and a
// receive that waits a bounded time, from one rank or any.
TEST(Bootstrap, SendWithinAndTryRecv) {
  ncclUniqueId id = freshId();
  std::atomic<int> phase{0};
  auto res = runJob(id, 3, [&](int r, Bootstrap& b) {
    constexpr uint32_t kTag = 0x00460000u;
    const std::vector<std::byte> msg = pattern(r, 0, kTag, 300);
    if (r != 0) {
      EXPECT_TRUE(b.sendWithin(0, kTag, msg, Deadline::afterMs(2000)).ok());
      EXPECT_EQ(b.sendWithin(0, 0xFFFFFFF0u, msg, Deadline::afterMs(2000)).code(), ncclInvalidArgument);
    } else {
      auto start = std::chrono::steady_clock::now();
      auto got = b.tryRecv(2, kTag, 5000);
      ASSERT_TRUE(got.has_value());
      EXPECT_EQ(*got, pattern(2, 0, kTag, 300));
      int from = -1;
      got = b.tryRecv(-1, kTag, 5000, &from);  // rank 1's, whenever it came
      ASSERT_TRUE(got.has_value());
      EXPECT_EQ(*got, pattern(1, 0, kTag, 300));
      EXPECT_EQ(from, 1);
      EXPECT_LT(secondsSince(start), 5.0);
      start = std::chrono::steady_clock::now();
      EXPECT_FALSE(b.tryRecv(-1, kTag, 50).has_value());
      EXPECT_GE(secondsSince(start), 0.04);
      EXPECT_FALSE(b.tryRecv(1, kTag, 0).has_value());
    }
    // Every rank is done with the messages before any bootstrap goes away.
    phase.fetch_add(1);
    while (phase.load() < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  for (int r = 0; r < 3; ++r) EXPECT_EQ(res[r].code, ncclSuccess) << res[r].error;
}

TEST(FaultNotice, EncodeDecode) {
  fault::Notice n;
  n.origin = 3;
  n.detector = 1;
  n.flags = fault::kTimedOut;
  std::snprintf(n.reason, sizeof n.reason, "shm: rank 1: peer rank 3 exited");
  std::vector<std::byte> wire = fault::encode(n);
  auto back = fault::decode(wire, 4);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->origin, 3);
  EXPECT_EQ(back->detector, 1);
  EXPECT_EQ(back->flags, fault::kTimedOut);
  EXPECT_STREQ(back->reason, n.reason);
  const char* why = nullptr;
  EXPECT_FALSE(fault::decode(wire, 3, &why).has_value());  // rank 3 is not in a job of 3
  EXPECT_STREQ(why, "rank out of range");
  EXPECT_FALSE(fault::decode(std::span(wire).first(wire.size() - 1), 4, &why).has_value());
  EXPECT_STREQ(why, "wrong size");
  std::vector<std::byte> bad = wire;
  bad[0] = std::byte{0};
  EXPECT_FALSE(fault::decode(bad, 4, &why).has_value());
  EXPECT_STREQ(why, "bad magic");
  bad = wire;
  std::memset(bad.data() + offsetof(fault::Notice, reason), 'x', sizeof n.reason);  // no terminator
  EXPECT_FALSE(fault::decode(bad, 4, &why).has_value());
  EXPECT_STREQ(why, "reason not terminated");
  bad = wire;
  bad[offsetof(fault::Notice, flags)] |= std::byte{4};  // a flag this version does not know
  EXPECT_FALSE(fault::decode(bad, 4, &why).has_value());
  EXPECT_STREQ(why, "unknown flags");
  // encode() terminates a full reason itself.
  std::memset(n.reason, 'y', sizeof n.reason);
  EXPECT_TRUE(fault::decode(fault::encode(n), 4).has_value());
}

TEST(Hmac, KnownAnswers) {
  auto hex = [](const Digest& d) {
    std::string s;
    char b[3];
    for (uint8_t x : d) snprintf(b, sizeof(b), "%02x", x), s += b;
    return s;
  };
  const std::string abc = "abc";
  EXPECT_EQ(hex(sha256({reinterpret_cast<const uint8_t*>(abc.data()), abc.size()})),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string key = "Jefe", msg = "what do ya want for nothing?";
  EXPECT_EQ(hex(hmacSha256({reinterpret_cast<const uint8_t*>(key.data()), key.size()},
                           {reinterpret_cast<const uint8_t*>(msg.data()), msg.size()})),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  std::array<uint8_t, 4> x{1, 2, 3, 4}, y{1, 2, 3, 5};
  EXPECT_TRUE(constantTimeEqual(x, x));
  EXPECT_FALSE(constantTimeEqual(x, y));
  EXPECT_FALSE(constantTimeEqual(x, std::span<const uint8_t>(y.data(), 3)));
  std::array<uint8_t, 32> r1{}, r2{};
  randomBytes(r1);
  randomBytes(r2);
  EXPECT_NE(r1, r2);
}

}  // namespace
}  // namespace atl
