// Transport tests: ranks are threads (or a forked child) with hand-built Contexts, no bootstrap.
#include <dirent.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/hmac.h"
#include "base/socket.h"
#include "base/status.h"
#include "transports/net/net_abi.h"
#include "transports/net/net_link.h"
#include "transports/net/net_plugin.h"
#include "transports/net/net_proxy.h"
#include "transports/net/net_transport.h"
#include "transports/shm/shm_ring.h"
#include "transports/transport.h"

namespace {

using namespace atl;
using namespace atl::transport;
using Clock = std::chrono::steady_clock;

// Net: the net transport (transports/net) over Atoll's built-in Socket net, the path every net
// plugin's links take.
enum class Kind { Shm, Socket, Net };
const char* kindName(Kind k) { return k == Kind::Shm ? "Shm" : k == Kind::Socket ? "Socket" : "Net"; }

net::PluginNet* socketNet() {
  // Never torn down, as processNets() keeps its plugins: a net destroyed at exit would touch this
  // thread's error slot after the thread's storage is gone.
  static const net::LoadResult* loaded = new net::LoadResult(net::loadPlugins(ATOLL_NET_PLUGIN_PATH));
  return net::pickNet(*loaded, "Socket");
}

// ---------------------------------------------------------------------------------------------
// Known pattern: stream byte i is kPattern[i % kPeriod]; the buffer is longer than the period so
// any piece of up to kMaxPiece bytes starting anywhere in it is contiguous.
constexpr size_t kPeriod = 1000003;  // prime, so ring offsets and pattern offsets never line up
constexpr size_t kMaxPiece = 1 << 20;

const std::vector<std::byte>& pattern() {
  static const std::vector<std::byte> p = [] {
    std::vector<std::byte> v(kPeriod + kMaxPiece);
    std::mt19937_64 rng(42);
    for (size_t i = 0; i < kPeriod; ++i) v[i] = static_cast<std::byte>(rng());
    for (size_t i = kPeriod; i < v.size(); ++i) v[i] = v[i - kPeriod];
    return v;
  }();
  return p;
}

// One direction of traffic: pushes `total` bytes through tx and verifies them at rx.
struct Pump {
  Connection* tx = nullptr;
  Connection* rx = nullptr;
  uint64_t total = 0;
  uint64_t sent = 0, received = 0;
  bool padded = true;        // all send/consume sizes multiples of 8: views must be whole words
  size_t maxSend = 256 << 10;
  size_t maxConsume = 256 << 10;
  std::mt19937_64 rng{1};

  bool done() const { return sent == total && received == total; }

  size_t randomSize(size_t max) {
    size_t n = 1 + rng() % max;
    return padded ? (n + 7) & ~size_t{7} : n;
  }

  // One non-blocking send attempt and one peek/consume; returns an error text or "".
  std::string step() {
    if (sent < total) {
      size_t n = std::min<uint64_t>(randomSize(maxSend), total - sent);
      auto r = tx->send(pattern().data() + sent % kPeriod, n);
      if (!r.ok()) return "send failed: " + lastErrorMessage();
      if (*r > n) return "send took more than offered";
      sent += *r;
    }
    if (received < total) {
      auto v = rx->peek();
      if (!v.ok()) return "peek failed: " + lastErrorMessage();
      std::span<const std::byte> view = *v;
      if (view.empty()) return "";
      if (padded && view.size() % 8 != 0) return "view of " + std::to_string(view.size()) + " bytes splits a word";
      if (received + view.size() > sent) return "view shows bytes that were never sent";
      size_t n = std::min(view.size(), randomSize(maxConsume));
      for (size_t off = 0; off < n; off += kMaxPiece) {
        size_t len = std::min(kMaxPiece, n - off);
        if (std::memcmp(view.data() + off, pattern().data() + (received + off) % kPeriod, len) != 0)
          return "content mismatch near stream offset " + std::to_string(received + off);
      }
      rx->consume(n);
      received += n;
    }
    return "";
  }
};

// Runs pumps round-robin in this thread until all are done (or a deadline); "" on success.
std::string runPumps(std::vector<Pump*> pumps, int timeoutMs = 60000) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  for (;;) {
    bool all = true;
    for (Pump* p : pumps) {
      if (p->done()) continue;
      all = false;
      if (std::string err = p->step(); !err.empty()) return err;
    }
    if (all) return "";
    if (Clock::now() > deadline) return "timed out";
  }
}

// ---------------------------------------------------------------------------------------------
// A communicator's worth of transports and contexts, built by hand.
struct World {
  Kind kind;
  std::vector<std::unique_ptr<Transport>> transports;
  std::vector<Context> ctx;
};

uint64_t randomHash() {
  uint64_t h;
  randomBytes(std::span<uint8_t>(reinterpret_cast<uint8_t*>(&h), sizeof(h)));
  return h;
}

Secret makeSecret(uint8_t seed) {
  Secret s{};
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(seed + i * 7);
  return s;
}

net::SockAddr loopback() {
  auto a = net::parseHostPort("127.0.0.1:0");
  EXPECT_TRUE(a.ok());
  return *a;
}

World makeWorld(Kind kind, int n, size_t bufferBytes, uint64_t commHash, int timeoutMs = 20000) {
  World w{kind, {}, {}};
  std::vector<PeerInfo> peers(n);
  for (int r = 0; r < n; ++r) {
    peers[r].rank = r;
    peers[r].pid = static_cast<int32_t>(getpid());
    peers[r].hostHash = 0x1234;
    if (kind == Kind::Shm) {
      w.transports.push_back(createShmTransport());
    } else if (kind == Kind::Net) {
      net::PluginNet* sock = socketNet();
      EXPECT_NE(sock, nullptr);
      auto t = net::createNetTransport(sock, 0, &peers[r]);
      EXPECT_TRUE(t.ok()) << lastErrorMessage();
      w.transports.push_back(std::move(*t));
    } else {
      auto t = createSocketTransport(loopback(), &peers[r]);
      EXPECT_TRUE(t.ok());
      w.transports.push_back(std::move(*t));
    }
  }
  for (int r = 0; r < n; ++r) {
    Context c;
    c.rank = r;
    c.nranks = n;
    c.commHash = commHash;
    c.secret = makeSecret(7);
    c.peers = peers;
    c.bufferBytes = bufferBytes;
    c.timeoutMs = timeoutMs;
    EXPECT_TRUE(w.transports[r]->attach(c).ok());
    w.ctx.push_back(c);
  }
  return w;
}

// conns[rank][peer][channel]
using Conns = std::vector<std::vector<std::vector<std::unique_ptr<Connection>>>>;

// The communicator's three phases: prepare all, (barrier), connect all, finish all (ranks as threads,
// each finishing its peers in a different random order so the socket accept pool has to stash).
Conns connectAll(World& w, int channels) {
  const int n = static_cast<int>(w.ctx.size());
  Conns conns(n);
  std::vector<std::vector<std::unique_ptr<Connector>>> connectors(n);
  for (int r = 0; r < n; ++r) {
    conns[r].resize(n);
    for (int p = 0; p < n; ++p) {
      conns[r][p].resize(channels);
      if (p == r) continue;
      for (int c = 0; c < channels; ++c) {
        auto conn = w.transports[r]->prepare(p, c);
        EXPECT_TRUE(conn.ok()) << lastErrorMessage();
        if (conn.ok()) connectors[r].push_back(std::move(*conn));
      }
    }
  }
  for (int r = 0; r < n; ++r)
    for (auto& c : connectors[r]) EXPECT_TRUE(c->connect().ok()) << lastErrorMessage();
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      std::vector<int> order(connectors[r].size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
      std::shuffle(order.begin(), order.end(), std::mt19937(r + 11));
      for (int i : order) {
        int peer = i / channels;
        if (peer >= r) ++peer;
        auto c = connectors[r][i]->finish();
        EXPECT_TRUE(c.ok()) << "rank " << r << ": " << lastErrorMessage();
        if (c.ok()) conns[r][peer][i % channels] = std::move(*c);
      }
    });
  }
  for (auto& t : threads) t.join();
  return conns;
}

int countFds() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

std::vector<std::string> shmLeftovers(uint64_t commHash) {
  char prefix[64];
  std::snprintf(prefix, sizeof(prefix), "atoll-%016llx-", static_cast<unsigned long long>(commHash));
  std::vector<std::string> out;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d))
      if (std::strncmp(e->d_name, prefix, std::strlen(prefix)) == 0) out.push_back(e->d_name);
    closedir(d);
  }
  return out;
}

// Every test: no fd leaks, and no shared-memory names of its communicator left behind.
class TransportTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    fds_ = countFds();
    hash_ = randomHash();
  }
  void TearDown() override {
    EXPECT_EQ(countFds(), fds_) << "file descriptor leak";
    EXPECT_TRUE(shmLeftovers(hash_).empty()) << "left in /dev/shm: " << shmLeftovers(hash_)[0];
  }
  World world(int n, size_t bufferBytes) { return makeWorld(GetParam(), n, bufferBytes, hash_); }
  int fds_ = 0;
  uint64_t hash_ = 0;
};

std::string paramName(const ::testing::TestParamInfo<Kind>& info) { return kindName(info.param); }

// Waits for a child, killing it after the timeout; returns its exit code (or -signal, or 999 on timeout).
int waitChild(pid_t pid, int timeoutMs) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    if (Clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return 999;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// One rank's side of a two-process setup (prepare/connect/finish on one channel).
Result<std::unique_ptr<Connection>> connectOne(Transport& t, int peer) {
  ATOLL_ASSIGN_OR_RETURN(auto connector, t.prepare(peer, 0));
  ATOLL_CHECK(connector->connect());
  return connector->finish();
}

// ---------------------------------------------------------------------------------------------

TEST_P(TransportTest, Stream64MiBRandomSizesPadded) {
  World w = world(2, 1 << 20);
  Conns c = connectAll(w, 1);
  ASSERT_TRUE(c[0][1][0] && c[1][0][0]);
  EXPECT_FALSE(c[0][1][0]->describe().empty());
  Pump p;
  p.tx = c[0][1][0].get();
  p.rx = c[1][0][0].get();
  p.total = 64ull << 20;
  EXPECT_EQ(runPumps({&p}), "");
}

// Consuming nothing is legal at any time, also before anything arrived (the one-sided engine does it
// after an empty peek): it must not skip or free what has not arrived yet.
TEST_P(TransportTest, ConsumingNothingBeforeDataArrivesKeepsTheStream) {
  World w = world(2, 64 << 10);
  Conns c = connectAll(w, 1);
  ASSERT_TRUE(c[0][1][0] && c[1][0][0]);
  Connection* rx = c[1][0][0].get();
  for (int i = 0; i < 3; ++i) {
    auto v = rx->peek();
    ASSERT_TRUE(v.ok());
    ASSERT_TRUE(v->empty());
    rx->consume(0);
  }
  Pump p;
  p.tx = c[0][1][0].get();
  p.rx = rx;
  p.total = 1 << 20;
  p.maxSend = 4096;
  EXPECT_EQ(runPumps({&p}, 20000), "");
}

// Sender and receiver in different threads, so the receiver reads while the sender writes; the
// total is whole words so all arrives.
void streamBetweenThreads(Connection* tx, Connection* rx, Pump p) {
  std::string sendErr, recvErr;
  std::thread sender([&] {
    Pump s = p;
    s.tx = tx;
    s.rng.seed(5);
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (s.sent < s.total && Clock::now() < deadline) {
      size_t n = std::min<uint64_t>(s.randomSize(s.maxSend), s.total - s.sent);
      auto r = s.tx->send(pattern().data() + s.sent % kPeriod, n);
      if (!r.ok()) {
        sendErr = lastErrorMessage();
        return;
      }
      s.sent += *r;
    }
  });
  Pump r = p;
  r.rx = rx;
  r.sent = r.total;  // the checker's view: everything may have been sent
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (r.received < r.total && Clock::now() < deadline) {
    auto v = r.rx->peek();
    if (!v.ok()) {
      recvErr = lastErrorMessage();
      break;
    }
    if (v->empty()) continue;
    size_t n = std::min(v->size(), r.randomSize(r.maxConsume));
    if (std::memcmp(v->data(), pattern().data() + r.received % kPeriod, std::min(n, kMaxPiece)) != 0) {
      size_t bad = 0;
      while (v->data()[bad] == pattern()[(r.received + bad) % kPeriod]) ++bad;
      recvErr = "mismatch at stream offset " + std::to_string(r.received + bad) + " (byte " + std::to_string(bad) +
                " of a " + std::to_string(v->size()) + "-byte view)";
      break;
    }
    r.rx->consume(n);
    r.received += n;
  }
  sender.join();
  EXPECT_EQ(sendErr, "");
  EXPECT_EQ(recvErr, "");
  EXPECT_EQ(r.received, r.total);
}

TEST_P(TransportTest, StreamUnpaddedSizesSenderAndReceiverThreads) {
  World w = world(2, 256 << 10);
  Conns c = connectAll(w, 1);
  ASSERT_TRUE(c[0][1][0] && c[1][0][0]);
  Pump p;
  p.padded = false;
  p.total = 32ull << 20;
  p.maxSend = 100000;
  p.maxConsume = 77777;
  streamBetweenThreads(c[0][1][0].get(), c[1][0][0].get(), p);
}

// Small messages: shm mirrors them beside the ring's head (RingHeader::inlineWords) and a reader
// takes them from there. Sizes around the mirror's 40 bytes, split sends, a
// reader that lags behind a new window and consumes in odd pieces must all read the stream as sent.
TEST_P(TransportTest, SmallMessagesBetweenThreadsKeepTheStream) {
  World w = world(2, 64 << 10);
  Conns c = connectAll(w, 1);
  ASSERT_TRUE(c[0][1][0] && c[1][0][0]);
  for (bool padded : {false, true}) {
    SCOPED_TRACE(padded ? "padded" : "unpadded");
    Pump p;
    p.padded = padded;
    p.total = 4u << 20;
    p.maxSend = 130;
    p.maxConsume = padded ? 48 : 37;
    streamBetweenThreads(c[0][1][0].get(), c[1][0][0].get(), p);
    Pump back = p;
    back.maxConsume = 4096;
    streamBetweenThreads(c[1][0][0].get(), c[0][1][0].get(), back);
  }
}

TEST_P(TransportTest, FullDuplexLargerThanBufferInOneLoop) {
  World w = world(2, 64 << 10);
  Conns c = connectAll(w, 1);
  ASSERT_TRUE(c[0][1][0] && c[1][0][0]);
  // Both sides send before they read, in one loop: must not deadlock even far past the buffer size.
  Pump ab, ba;
  ab.tx = c[0][1][0].get();
  ab.rx = c[1][0][0].get();
  ba.tx = c[1][0][0].get();
  ba.rx = c[0][1][0].get();
  ab.total = ba.total = 16ull << 20;
  ba.rng.seed(2);
  EXPECT_EQ(runPumps({&ab, &ba}), "");
}

TEST_P(TransportTest, SeveralPeersAndChannelsAtOnce) {
  constexpr int kRanks = 4, kChannels = 3;
  World w = world(kRanks, 128 << 10);
  Conns c = connectAll(w, kChannels);
  // Each rank is a thread that sends to and receives from every peer on every channel in one loop.
  std::vector<std::vector<Pump>> pumps(kRanks);  // pumps[r]: r sends, peer receives (driven by r)
  for (int r = 0; r < kRanks; ++r)
    for (int p = 0; p < kRanks; ++p)
      for (int ch = 0; ch < kChannels && p != r; ++ch) {
        ASSERT_TRUE(c[r][p][ch] && c[p][r][ch]);
        ASSERT_EQ(c[r][p][ch].get() != c[r][p][(ch + 1) % kChannels].get(), true);
      }
  // Split each direction: the sending rank's thread sends, the receiving rank's thread receives.
  struct Dir {
    Pump pump;
    int from = 0, to = 0;  // the sender's thread owns pump.sent/rng, the receiver's pump.received
  };
  std::vector<std::unique_ptr<Dir>> dirs;
  for (int r = 0; r < kRanks; ++r)
    for (int p = 0; p < kRanks; ++p)
      for (int ch = 0; ch < kChannels && p != r; ++ch) {
        auto d = std::make_unique<Dir>();
        d->from = r;
        d->to = p;
        d->pump.tx = c[r][p][ch].get();
        d->pump.rx = c[p][r][ch].get();
        d->pump.total = (2ull << 20) + 8 * (r * 16 + p * 4 + ch);
        d->pump.rng.seed(r * 100 + p * 10 + ch);
        d->pump.maxSend = d->pump.maxConsume = 50000;
        dirs.push_back(std::move(d));
      }
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      auto deadline = Clock::now() + std::chrono::seconds(60);
      for (;;) {
        bool all = true;
        for (auto& d : dirs) {
          Pump& p = d->pump;
          const bool mineTx = d->from == r, mineRx = d->to == r;
          if (mineTx && p.sent < p.total) {
            all = false;
            size_t n = std::min<uint64_t>(p.randomSize(p.maxSend), p.total - p.sent);
            auto s = p.tx->send(pattern().data() + p.sent % kPeriod, n);
            if (!s.ok()) {
              errors[r] = lastErrorMessage();
              return;
            }
            p.sent += *s;
          }
          if (mineRx && p.received < p.total) {
            all = false;
            auto v = p.rx->peek();
            if (!v.ok()) {
              errors[r] = lastErrorMessage();
              return;
            }
            if (v->empty()) continue;
            if (v->size() % 8 != 0 || p.received + v->size() > p.total) {
              errors[r] = "bad view";
              return;
            }
            if (std::memcmp(v->data(), pattern().data() + p.received % kPeriod, v->size()) != 0) {
              errors[r] = "content mismatch";
              return;
            }
            p.rx->consume(v->size());
            p.received += v->size();
          }
        }
        if (all) return;
        if (Clock::now() > deadline) {
          errors[r] = "timed out";
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// receiveInto() may bypass the staging ring (sockets): mixing it with peek()/consume() at any
// byte position, with pieces that wrap the ring, must still deliver the stream exactly once, in order.
TEST_P(TransportTest, ReceiveIntoInterleavedWithPeekKeepsTheStream) {
  World w = world(2, 64 << 10);
  Conns c = connectAll(w, 1);
  ASSERT_TRUE(c[0][1][0] && c[1][0][0]);
  Connection* tx = c[0][1][0].get();
  Connection* rx = c[1][0][0].get();
  constexpr uint64_t kTotal = 24ull << 20;
  std::vector<std::byte> out(kMaxPiece);
  std::mt19937_64 rng(7);
  uint64_t sent = 0, received = 0;
  uint64_t viaDirect = 0, viaPeek = 0;
  std::string err;
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while (received < kTotal && err.empty() && Clock::now() < deadline) {
    if (sent < kTotal) {
      size_t n = std::min<uint64_t>(1 + rng() % (200 << 10), kTotal - sent);
      auto r = tx->send(pattern().data() + sent % kPeriod, n);
      if (!r.ok()) err = "send: " + lastErrorMessage();
      else sent += *r;
    }
    if (rng() % 2 == 0) {
      size_t want = std::min<uint64_t>(1 + rng() % (300 << 10), kTotal - received);
      auto r = rx->receiveInto(out.data(), std::min(want, out.size()));
      if (!r.ok()) {
        err = "receiveInto: " + lastErrorMessage();
      } else if (*r > 0) {
        if (std::memcmp(out.data(), pattern().data() + received % kPeriod, *r) != 0) err = "receiveInto: mismatch";
        received += *r;
        viaDirect += *r;
      }
    } else {
      auto v = rx->peek();
      if (!v.ok()) {
        err = "peek: " + lastErrorMessage();
      } else if (!v->empty()) {
        size_t n = std::min({v->size(), kMaxPiece, static_cast<size_t>(1 + rng() % (100 << 10))});
        if (std::memcmp(v->data(), pattern().data() + received % kPeriod, n) != 0) err = "peek: mismatch";
        rx->consume(n);
        received += n;
        viaPeek += n;
      }
    }
  }
  EXPECT_EQ(err, "");
  EXPECT_EQ(received, kTotal);
  EXPECT_GT(viaDirect, 0u);
  EXPECT_GT(viaPeek, 0u);
}

/// Peeks until the link fails (or 10 s pass), checking every byte against the pattern: how many
/// arrived, and the failure.
struct Drained {
  uint64_t got = 0;
  Status last;
};
Drained drainUntilError(Connection& c) {
  Drained d;
  for (auto deadline = Clock::now() + std::chrono::seconds(10); Clock::now() < deadline;) {
    auto v = c.peek();
    if (!v.ok()) {
      d.last = v.status();
      break;
    }
    if (!v->empty()) {
      EXPECT_EQ(std::memcmp(v->data(), pattern().data() + d.got, v->size()), 0);
      d.got += v->size();
      c.consume(v->size());
    }
  }
  return d;
}

TEST_P(TransportTest, ReceiveIntoReportsAClosedPeerAfterDrain) {
  World w = world(2, 64 << 10);
  Conns c = connectAll(w, 1);
  ASSERT_TRUE(c[0][1][0] && c[1][0][0]);
  ASSERT_EQ(*c[0][1][0]->send(pattern().data(), 1000), 1000u);
  c[0][1][0].reset();
  std::vector<std::byte> out(4096);
  uint64_t got = 0;
  Status last;
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    auto r = c[1][0][0]->receiveInto(out.data() + got, out.size() - got);
    if (!r.ok()) {
      last = r.status();
      break;
    }
    got += *r;
  }
  EXPECT_EQ(got, 1000u);
  EXPECT_EQ(std::memcmp(out.data(), pattern().data(), 1000), 0);
  EXPECT_EQ(last.code(), ncclRemoteError);
}

TEST_P(TransportTest, ClosedPeerYieldsRemoteErrorAfterDrain) {
  World w = world(2, 64 << 10);
  Conns c = connectAll(w, 1);
  ASSERT_TRUE(c[0][1][0] && c[1][0][0]);
  auto s = c[0][1][0]->send(pattern().data(), 1000);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(*s, 1000u);
  c[0][1][0].reset();  // rank 0 closes its end in an orderly way
  const Drained d = drainUntilError(*c[1][0][0]);
  EXPECT_EQ(d.got, 1000u) << "bytes sent before the close must still be delivered";
  EXPECT_EQ(d.last.code(), ncclRemoteError);
  EXPECT_NE(lastErrorMessage().find("peer rank 0"), std::string::npos) << lastErrorMessage();

  // The other direction: rank 1 keeps sending to the closed rank 0 and must get an error, not hang.
  Status sendErr;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    auto r = c[1][0][0]->send(pattern().data(), 4096);
    if (!r.ok()) {
      sendErr = r.status();
      break;
    }
  }
  EXPECT_EQ(sendErr.code(), ncclRemoteError);
}

TEST_P(TransportTest, ForkedPeerFullDuplex) {
  // A forked child has no proxy thread to drive the net's links; killed net peers are covered by
  // real processes (fault_dead_peer_net_4, one_sided_kill_net_3).
  if (GetParam() == Kind::Net) GTEST_SKIP() << "the net transport's proxy thread does not survive fork";
  World w = world(2, 128 << 10);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child: rank 1. Only async-signal-safe-ish work, no gtest; the exit code carries the verdict.
    w.transports[0].reset();
    auto conn = connectOne(*w.transports[1], 0);
    if (!conn.ok()) _exit(2);
    Pump tx, rx;
    tx.tx = rx.rx = conn->get();
    tx.total = rx.total = 8ull << 20;
    // Drive both directions of our one connection: our sends feed the parent, our reads check it.
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while ((tx.sent < tx.total || rx.received < rx.total) && Clock::now() < deadline) {
      if (tx.sent < tx.total) {
        size_t n = std::min<uint64_t>(tx.randomSize(tx.maxSend), tx.total - tx.sent);
        auto r = tx.tx->send(pattern().data() + tx.sent % kPeriod, n);
        if (!r.ok()) _exit(3);
        tx.sent += *r;
      }
      // Once our side is complete the parent may close at any moment: stop reading so its orderly
      // close is not mistaken for an early one.
      if (rx.received == rx.total) continue;
      auto v = rx.rx->peek();
      if (!v.ok()) _exit(4);
      if (!v->empty()) {
        if (v->size() % 8 != 0 || std::memcmp(v->data(), pattern().data() + rx.received % kPeriod,
                                              std::min(v->size(), kMaxPiece)) != 0)
          _exit(5);
        size_t n = std::min(v->size(), kMaxPiece);
        rx.rx->consume(n);
        rx.received += n;
      }
    }
    if (rx.received != rx.total) _exit(6);
    // Wait for the parent's goodbye (orderly close) so it has read everything we sent.
    while (Clock::now() < deadline) {
      auto v = rx.rx->peek();
      if (!v.ok()) _exit(0);
    }
    _exit(7);
  }
  w.transports[1].reset();
  auto conn = connectOne(*w.transports[0], 1);
  ASSERT_TRUE(conn.ok()) << lastErrorMessage();
  Pump tx, rx;
  tx.tx = rx.rx = conn->get();
  tx.total = rx.total = 8ull << 20;
  std::string err;
  auto deadline = Clock::now() + std::chrono::seconds(60);
  while ((tx.sent < tx.total || rx.received < rx.total) && err.empty() && Clock::now() < deadline) {
    if (tx.sent < tx.total) {
      size_t n = std::min<uint64_t>(tx.randomSize(tx.maxSend), tx.total - tx.sent);
      auto r = tx.tx->send(pattern().data() + tx.sent % kPeriod, n);
      if (!r.ok()) err = "send: " + lastErrorMessage();
      else tx.sent += *r;
    }
    auto v = rx.rx->peek();
    if (!v.ok()) {
      err = "peek: " + lastErrorMessage();
    } else if (!v->empty()) {
      size_t n = std::min(v->size(), kMaxPiece);
      if (std::memcmp(v->data(), pattern().data() + rx.received % kPeriod, n) != 0) err = "mismatch";
      rx.rx->consume(n);
      rx.received += n;
    }
  }
  EXPECT_EQ(err, "");
  EXPECT_EQ(rx.received, rx.total);
  conn->reset();
  EXPECT_EQ(waitChild(pid, 30000), 0);
}

TEST_P(TransportTest, ForkedPeerThatDiesIsDetected) {
  if (GetParam() == Kind::Net) GTEST_SKIP() << "the net transport's proxy thread does not survive fork";
  // The child (rank 1) writes 100 KiB and exits without closing anything, like a crash.
  World w = world(2, 64 << 10);
  constexpr size_t kBytes = 100 << 10;
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    w.transports[0].reset();
    auto conn = connectOne(*w.transports[1], 0);
    if (!conn.ok()) _exit(2);
    size_t sent = 0;
    auto deadline = Clock::now() + std::chrono::seconds(30);
    while (sent < kBytes && Clock::now() < deadline) {
      auto r = (*conn)->send(pattern().data() + sent, kBytes - sent);
      if (!r.ok()) _exit(3);
      sent += *r;
    }
    _exit(sent == kBytes ? 0 : 4);  // no destructor runs: the "closed" flag is never set
  }
  w.transports[1].reset();
  auto conn = connectOne(*w.transports[0], 1);
  ASSERT_TRUE(conn.ok()) << lastErrorMessage();
  size_t got = 0;
  auto deadline = Clock::now() + std::chrono::seconds(30);
  while (got < kBytes && Clock::now() < deadline) {
    auto v = (*conn)->peek();
    ASSERT_TRUE(v.ok()) << lastErrorMessage();
    if (v->empty()) continue;
    ASSERT_EQ(std::memcmp(v->data(), pattern().data() + got, v->size()), 0);
    (*conn)->consume(v->size());
    got += v->size();
  }
  ASSERT_EQ(got, kBytes);
  ASSERT_EQ(waitChild(pid, 30000), 0);  // reaped: its pid no longer exists
  Status last;
  deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    auto v = (*conn)->peek();
    if (!v.ok()) {
      last = v.status();
      break;
    }
    ASSERT_TRUE(v->empty());
  }
  EXPECT_EQ(last.code(), ncclRemoteError);
  EXPECT_NE(lastErrorMessage().find("peer rank 1"), std::string::npos) << lastErrorMessage();
}

INSTANTIATE_TEST_SUITE_P(Kinds, TransportTest, ::testing::Values(Kind::Shm, Kind::Socket, Kind::Net), paramName);

// ---------------------------------------------------------------------------------------------
// Socket-only: setup hygiene.
class SocketSetupTest : public TransportTest {};

// A stand-alone socket transport acting as rank ctx.rank, dialing `peer` on channel 0 as `ctx` says.
struct Dialer {
  std::unique_ptr<Transport> transport;
  std::unique_ptr<Connector> connector;
};
Dialer dialAs(const Context& ctx, int peer) {
  PeerInfo ignored;
  auto t = createSocketTransport(loopback(), &ignored);
  EXPECT_TRUE(t.ok());
  EXPECT_TRUE((*t)->attach(ctx).ok());
  auto conn = (*t)->prepare(peer, 0);
  EXPECT_TRUE(conn.ok());
  EXPECT_TRUE((*conn)->connect().ok());
  return {std::move(*t), std::move(*conn)};
}

TEST_P(SocketSetupTest, BadHellosAreRejectedAndRealPeersStillConnect) {
  World w = world(2, 64 << 10);
  const net::SockAddr target = w.ctx[0].peers[1].dataAddr;
  std::vector<net::Fd> clients;
  auto dial = [&] {
    auto fd = net::connectTo(target, Deadline::afterMs(5000), nullptr);
    EXPECT_TRUE(fd.ok());
    return std::move(*fd);
  };
  // Garbage, a short read, and a silent client that never says anything.
  net::Fd garbage = dial();
  std::vector<uint8_t> junk(80, 0xab);
  ASSERT_TRUE(net::sendAll(garbage.get(), junk.data(), junk.size(), Deadline::afterMs(5000), nullptr).ok());
  net::Fd shortRead = dial();
  const uint32_t magic = 0x41544c48;
  ASSERT_TRUE(net::sendAll(shortRead.get(), &magic, sizeof(magic), Deadline::afterMs(5000), nullptr).ok());
  shortRead.reset();
  net::Fd silent = dial();

  // A well-formed hello from an impostor that does not know the secret, and one from another comm.
  auto impostor = [&](Secret secret, uint64_t commHash) {
    Context bad = w.ctx[0];
    bad.secret = secret;
    bad.commHash = commHash;
    bad.timeoutMs = 5000;
    return dialAs(bad, 1);
  };
  auto wrongSecret = impostor(makeSecret(99), hash_);
  auto wrongComm = impostor(makeSecret(7), hash_ ^ 1);

  // Now the real rank 0; rank 1 must pair with it promptly despite the noise queued before it.
  auto real0 = w.transports[0]->prepare(1, 0);
  auto real1 = w.transports[1]->prepare(0, 0);
  ASSERT_TRUE(real0.ok() && real1.ok());
  ASSERT_TRUE((*real0)->connect().ok());
  ASSERT_TRUE((*real1)->connect().ok());
  auto t0 = Clock::now();
  auto conn1 = (*real1)->finish();
  auto elapsed = Clock::now() - t0;
  ASSERT_TRUE(conn1.ok()) << lastErrorMessage();
  EXPECT_LT(elapsed, std::chrono::seconds(3)) << "a silent client delayed setup";
  auto conn0 = (*real0)->finish();
  ASSERT_TRUE(conn0.ok()) << lastErrorMessage();

  // The impostors were closed on, so their own finish() fails fast instead of succeeding.
  EXPECT_FALSE(wrongSecret.connector->finish().ok());
  EXPECT_FALSE(wrongComm.connector->finish().ok());
  // The garbage client was closed too.
  char b;
  EXPECT_EQ(recv(garbage.get(), &b, 1, 0), 0);

  Pump p;
  p.tx = conn0->get();
  p.rx = conn1->get();
  p.total = 1 << 20;
  EXPECT_EQ(runPumps({&p}), "");
}

TEST_P(SocketSetupTest, RecordedHelloIsRejectedByEveryOtherListener) {
  // Two communicators with the same secret and comm hash, as two runs of one NCCL_COMM_ID job have.
  World a = world(2, 64 << 10);
  World b = world(2, 64 << 10);
  EXPECT_NE(a.ctx[0].peers[1].dataChallenge, b.ctx[0].peers[1].dataChallenge);

  // Record the hello b's rank 0 sends to its rank 1, by pointing it at a listener of ours.
  net::SockAddr recorderAddr;
  auto recorder = net::listenOn(loopback(), 4, &recorderAddr);
  ASSERT_TRUE(recorder.ok());
  Context misdirected = b.ctx[0];
  misdirected.peers[1].dataAddr = recorderAddr;
  Dialer sender = dialAs(misdirected, 1);
  auto recorded = net::acceptOne(recorder->get(), Deadline::afterMs(5000), nullptr);
  ASSERT_TRUE(recorded.ok());
  uint8_t hello[80];
  ASSERT_TRUE(net::recvAll(recorded->get(), hello, sizeof hello, Deadline::afterMs(5000), nullptr).ok());

  auto replay = [&](const net::SockAddr& to) {
    auto fd = net::connectTo(to, Deadline::afterMs(5000), nullptr);
    EXPECT_TRUE(fd.ok());
    EXPECT_TRUE(net::sendAll(fd->get(), hello, sizeof hello, Deadline::afterMs(5000), nullptr).ok());
    return std::move(*fd);
  };
  // To a's rank 1 the recording is a forgery: it is closed on, and the real rank 0 still pairs up.
  net::Fd toA = replay(a.ctx[0].peers[1].dataAddr);
  auto real0 = a.transports[0]->prepare(1, 0);
  auto real1 = a.transports[1]->prepare(0, 0);
  ASSERT_TRUE(real0.ok() && real1.ok());
  ASSERT_TRUE((*real0)->connect().ok());
  std::thread acceptor([&] { ASSERT_TRUE((*real1)->finish().ok()) << lastErrorMessage(); });
  auto conn0 = (*real0)->finish();
  acceptor.join();
  ASSERT_TRUE(conn0.ok()) << lastErrorMessage();
  char byte;
  EXPECT_EQ(recv(toA.get(), &byte, 1, 0), 0) << "a's rank 1 kept a replayed hello";

  // Control: to the listener it was made for, the same bytes are a genuine hello and get an ack.
  net::Fd toB = replay(b.ctx[0].peers[1].dataAddr);
  auto bAcceptor = b.transports[1]->prepare(0, 0);
  ASSERT_TRUE(bAcceptor.ok());
  ASSERT_TRUE((*bAcceptor)->connect().ok());
  EXPECT_TRUE((*bAcceptor)->finish().ok()) << lastErrorMessage();
}

TEST_P(SocketSetupTest, FinishTimesOutWhenThePeerNeverConnects) {
  World w = makeWorld(Kind::Socket, 2, 64 << 10, hash_, 300);
  auto c = w.transports[1]->prepare(0, 0);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->connect().ok());
  auto t0 = Clock::now();
  auto r = (*c)->finish();
  EXPECT_FALSE(r.ok());
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(3));
}

INSTANTIATE_TEST_SUITE_P(Socket, SocketSetupTest, ::testing::Values(Kind::Socket), paramName);

// ---------------------------------------------------------------------------------------------
// Shm-only: naming and lifetime of the shared-memory objects.
class ShmSetupTest : public TransportTest {};

TEST_P(ShmSetupTest, NamesAreGoneOnceConnectedAndWhenUnfinished) {
  World w = world(3, 64 << 10);
  // Prepared but never finished: the creator's destructor removes its name.
  {
    auto c = w.transports[2]->prepare(0, 5);
    ASSERT_TRUE(c.ok());
    EXPECT_EQ(shmLeftovers(hash_).size(), 1u);
  }
  EXPECT_TRUE(shmLeftovers(hash_).empty());
  // Connected: names disappear as soon as both ends are mapped, while the links stay usable.
  Conns c = connectAll(w, 2);
  EXPECT_TRUE(shmLeftovers(hash_).empty());
  Pump p;
  p.tx = c[2][1][1].get();
  p.rx = c[1][2][1].get();
  p.total = 1 << 20;
  EXPECT_EQ(runPumps({&p}), "");
}

TEST_P(ShmSetupTest, SenderWaitsForALateReceiver) {
  World w = world(2, 64 << 10);
  auto sender = w.transports[0]->prepare(1, 0);
  ASSERT_TRUE(sender.ok());
  ASSERT_TRUE((*sender)->connect().ok());
  std::unique_ptr<Connector> late;
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto r = w.transports[1]->prepare(0, 0);
    EXPECT_TRUE(r.ok());
    late = std::move(*r);
  });
  auto conn0 = (*sender)->finish();  // rank 0 attaches to rank 1's ring, created 200 ms later
  t.join();
  ASSERT_TRUE(conn0.ok()) << lastErrorMessage();
  ASSERT_TRUE(late->connect().ok());
  auto conn1 = late->finish();
  ASSERT_TRUE(conn1.ok()) << lastErrorMessage();
  Pump p;
  p.tx = conn0->get();
  p.rx = conn1->get();
  p.total = 1 << 20;
  EXPECT_EQ(runPumps({&p}), "");
}

TEST_P(ShmSetupTest, CapacityIsAPowerOfTwoOfAtLeast64KiB) {
  EXPECT_EQ(shm::Ring::roundCapacity(1), 64u << 10);
  EXPECT_EQ(shm::Ring::roundCapacity(4u << 20), 4u << 20);
  EXPECT_EQ(shm::Ring::roundCapacity((4u << 20) + 8), 8u << 20);
  PeerInfo a, b;
  a.hostHash = 1;
  b.hostHash = 2;
  EXPECT_FALSE(createShmTransport()->canConnect(a, b));
  b.hostHash = 1;
  EXPECT_TRUE(createShmTransport()->canConnect(a, b));
}

TEST_P(ShmSetupTest, PeerThatExitsIsSeenWhileAZombieAndItsForkedChildDoesNotHideIt) {
  // Liveness comes from a record lock the kernel drops at exit (shm_ring.h), not from the pid: a
  // zombie still has one, and so would a pid reused or seen through another pid namespace.
  World w = world(2, 64 << 10);
  int go[2];
  ASSERT_EQ(pipe(go), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(go[1]);
    w.transports[0].reset();
    auto conn = connectOne(*w.transports[1], 0);
    if (!conn.ok()) _exit(2);
    // A worker forked after setup inherits every descriptor and mapping, and outlives us.
    if (fork() == 0) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      _exit(0);
    }
    char c;
    if (read(go[0], &c, 1) != 1) _exit(3);
    _exit(0);  // no destructor runs: the "closed" flag is never set
  }
  close(go[0]);
  w.transports[1].reset();
  auto conn = connectOne(*w.transports[0], 1);
  ASSERT_TRUE(conn.ok()) << lastErrorMessage();
  // Alive and idle: many probe periods pass without a verdict.
  for (auto until = Clock::now() + std::chrono::milliseconds(200); Clock::now() < until;) {
    auto v = (*conn)->peek();
    ASSERT_TRUE(v.ok()) << lastErrorMessage();
    ASSERT_TRUE(v->empty());
  }
  ASSERT_EQ(write(go[1], "x", 1), 1);
  close(go[1]);
  const auto exited = Clock::now();
  Status last;
  while (Clock::now() - exited < std::chrono::seconds(10)) {
    auto v = (*conn)->peek();
    if (!v.ok()) {
      last = v.status();
      break;
    }
  }
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - exited).count();
  EXPECT_EQ(last.code(), ncclRemoteError);
  EXPECT_LT(ms, 2000) << "the exit was seen only after " << ms << " ms";
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, WNOHANG), pid) << "the peer should have been a zombie until now";
}

INSTANTIATE_TEST_SUITE_P(Shm, ShmSetupTest, ::testing::Values(Kind::Shm), paramName);

// ---------------------------------------------------------------------------------------------
// Net links built by hand over the Socket net, to order events the transport leaves to chance.

/// One connection of `n` made on `proxy`: the dialler's send comm and the listener's receive comm.
void netPair(net::PluginNet* n, net::Proxy& proxy, void** sendComm, void** recvComm) {
  void* listenComm = nullptr;
  std::array<uint8_t, net::abi::kHandleMaxSize> handle{};
  ASSERT_TRUE(proxy.call([&] { return n->listen(0, handle.data(), &listenComm); }).ok()) << lastErrorMessage();
  *sendComm = *recvComm = nullptr;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while ((*sendComm == nullptr || *recvComm == nullptr) && Clock::now() < deadline) {
    ASSERT_TRUE(proxy.call([&] {
                       if (*sendComm == nullptr) ATOLL_CHECK(n->connect(0, handle.data(), sendComm));
                       if (*recvComm == nullptr) ATOLL_CHECK(n->accept(listenComm, recvComm));
                       return Status::Ok();
                     }).ok())
        << lastErrorMessage();
  }
  (void)proxy.call([&] { return n->closeListen(listenComm); });
  ASSERT_TRUE(*sendComm != nullptr && *recvComm != nullptr) << "no connection within 10 s";
}

TEST(NetLinkTest, LastMessageBeforeTheClosesArrivesWhenTheFirstReceivesMeetTheClose) {
  // The peer sent its last message and closed before this link posted a receive. The Socket net
  // fills the first receive inside the second irecv, meets the close there and fails the third:
  // the link must still hand over the message, then report the close.
  net::PluginNet* n = socketNet();
  ASSERT_NE(n, nullptr);
  net::Proxy proxy;
  void *sendAB, *recvAB, *sendBA, *recvBA;
  ASSERT_NO_FATAL_FAILURE(netPair(n, proxy, &sendAB, &recvAB));
  ASSERT_NO_FATAL_FAILURE(netPair(n, proxy, &sendBA, &recvBA));
  const size_t maxMessage = n->devices()[0].maxP2pBytes;
  {
    auto a = net::NetLink::create({n, &proxy, sendAB, recvBA, maxMessage, "rank 0"}, 0, 1, 0, 64 << 10);
    ASSERT_TRUE(a.ok()) << lastErrorMessage();
    ASSERT_EQ(*(*a)->send(pattern().data(), 1000), 1000u);
  }  // flushed, then closed
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the bytes and the close reach b's socket
  auto b = net::NetLink::create({n, &proxy, sendBA, recvAB, maxMessage, "rank 1"}, 1, 0, 0, 64 << 10);
  ASSERT_TRUE(b.ok()) << lastErrorMessage();
  const Drained d = drainUntilError(**b);
  EXPECT_EQ(d.got, 1000u) << "the message sent before the close was lost";
  EXPECT_EQ(d.last.code(), ncclRemoteError);
}

}  // namespace
