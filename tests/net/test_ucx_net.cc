// libnccl-net-atoll-ucx.so (transports/ucx) through the plugin host, between two processes over
// UCX's tcp: closing a send comm must not wait on a peer that progresses nothing. A flush-mode
// endpoint close needs the peer's worker to answer; a rank idle in the bootstrap (or busy
// elsewhere) never does, and a close that waited for it held the process's UCX lock until that
// rank's bootstrap timed out, failing every comm of both. And closing a receive comm in the middle
// of a rendezvous must leave its buffer alone: UCX cannot cancel a receive it has matched, and the
// fragments still on their way were once written into a ring the link had freed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <vector>

#include "transports/net/net_abi.h"
#include "transports/net/net_plugin.h"

namespace {

using atl::net::PluginNet;
namespace abi = atl::net::abi;
using Clock = std::chrono::steady_clock;

constexpr int kPeerIdleMs = 8000;  // longer than the net's close timeout (5 s)
constexpr int kCloseBoundMs = 1000;
constexpr int kLastCloseBoundMs = 6500;

long long msSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

atl::net::LoadResult loadUcx() {
  setenv("UCX_TLS", "tcp", 1);
  setenv("UCX_MEM_EVENTS", "no", 1);
  setenv("UCX_WARN_UNUSED_ENV_VARS", "n", 1);
  return atl::net::loadPlugins(ATOLL_UCX_PLUGIN_PATH);
}

/// Child side, first steps (forked before anything touched UCX, whose worker a fork does not
/// carry): the net, the parent's handle from `handleFd`, optionally a listener of our own (as a
/// rank's comm has), and a send comm dialled to the parent. Exits 2-4 when one fails.
struct Dialled {
  atl::net::LoadResult loaded;
  PluginNet* net = nullptr;
  void* listen = nullptr;
  void* send = nullptr;
};
void dialParent(int handleFd, bool listenToo, Dialled* d) {
  d->loaded = loadUcx();
  if (d->loaded.nets.size() != 1) _exit(2);
  d->net = d->loaded.nets[0].get();
  char handle[abi::kHandleMaxSize];
  if (read(handleFd, handle, sizeof handle) != static_cast<ssize_t>(sizeof handle)) _exit(2);
  char own[abi::kHandleMaxSize];
  if (listenToo && !d->net->listen(0, own, &d->listen).ok()) _exit(2);
  const auto t0 = Clock::now();
  while (d->send == nullptr) {
    if (!d->net->connect(0, handle, &d->send).ok()) _exit(3);
    if (msSince(t0) > 20000) _exit(4);
  }
}

/// Parent side: forks `child` (which gets the read end of a pipe carrying our handle), then listens
/// and accepts its connection.
struct Accepted {
  pid_t child = -1;
  atl::net::LoadResult loaded;
  PluginNet* net = nullptr;
  void* listen = nullptr;
  void* recv = nullptr;
};
void forkAndAccept(const std::function<void(int)>& child, Accepted* a) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  a->child = fork();
  ASSERT_GE(a->child, 0);
  if (a->child == 0) {
    child(fds[0]);
    _exit(99);
  }
  close(fds[0]);
  a->loaded = loadUcx();
  ASSERT_EQ(a->loaded.nets.size(), 1u) << (a->loaded.tried.empty() ? "" : a->loaded.tried.back());
  a->net = a->loaded.nets[0].get();
  char handle[abi::kHandleMaxSize] = {};
  ASSERT_TRUE(a->net->listen(0, handle, &a->listen).ok());
  ASSERT_EQ(write(fds[1], handle, sizeof handle), static_cast<ssize_t>(sizeof handle));
  close(fds[1]);
  const auto t0 = Clock::now();
  while (a->recv == nullptr && msSince(t0) < 20000) ASSERT_TRUE(a->net->accept(a->listen, &a->recv).ok());
  ASSERT_NE(a->recv, nullptr);
}

/// The child's exit code, waiting up to 15 s (then killed: -1).
int reap(pid_t child) {
  int status = 0;
  pid_t waited = 0;
  for (const auto w0 = Clock::now(); waited == 0 && msSince(w0) < 15000; usleep(10 * 1000))
    waited = waitpid(child, &status, WNOHANG);
  if (waited == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    return -1;
  }
  return waited == child && WIFEXITED(status) ? WEXITSTATUS(status) : -2;
}

/// Child side: dial, optionally send one message, then close the send comm (at once) and the
/// listener (the last hold on the worker: within the close timeout, the flush given up). The exit
/// code says what went wrong.
[[noreturn]] void dialSendClose(int handleFd, bool sendFirst) {
  Dialled d;
  dialParent(handleFd, true, &d);
  PluginNet& net = *d.net;
  const auto t0 = Clock::now();
  if (sendFirst) {
    std::vector<char> out(4096, 'x');
    void* req = nullptr;
    while (req == nullptr)
      if (!net.isend(d.send, out.data(), out.size(), 1, nullptr, &req).ok()) _exit(5);
    int done = 0;
    while (!done)
      if (!net.test(req, 1, &done, nullptr).ok() || msSince(t0) > 20000) _exit(6);
  }
  // The parent now progresses nothing for kPeerIdleMs.
  const auto c0 = Clock::now();
  if (!net.closeSend(d.send).ok()) _exit(7);
  if (msSince(c0) >= kCloseBoundMs) _exit(8);
  const auto l0 = Clock::now();
  if (!net.closeListen(d.listen).ok()) _exit(9);
  _exit(msSince(l0) < kLastCloseBoundMs ? 0 : 10);
}

/// One receive of `in`, posted.
void* postRecv(PluginNet& net, void* recv, std::vector<char>& in) {
  void* data[1] = {in.data()};
  const size_t size[1] = {in.size()};
  const int tag[1] = {1};
  void* mh[1] = {};
  void* req = nullptr;
  while (req == nullptr)
    if (!net.irecv(recv, 1, data, size, tag, mh, &req).ok()) return nullptr;
  return req;
}

class UcxNet : public ::testing::TestWithParam<bool> {};

TEST_P(UcxNet, CloseSendDoesNotWaitForAnIdlePeer) {
  const bool sendFirst = GetParam();
  Accepted a;
  ASSERT_NO_FATAL_FAILURE(forkAndAccept([&](int fd) { dialSendClose(fd, sendFirst); }, &a));
  PluginNet& net = *a.net;
  if (sendFirst) {
    std::vector<char> in(4096);
    void* req = postRecv(net, a.recv, in);
    ASSERT_NE(req, nullptr);
    int done = 0;
    for (const auto t0 = Clock::now(); !done && msSince(t0) < 20000;) ASSERT_TRUE(net.test(req, 1, &done, nullptr).ok());
    ASSERT_TRUE(done);
    EXPECT_EQ(in, std::vector<char>(4096, 'x'));
  }
  usleep(kPeerIdleMs * 1000);  // idle: no call into the net, so no progress of our worker
  const int code = reap(a.child);
  ASSERT_NE(code, -1) << "the child's close never returned";
  EXPECT_EQ(code, 0) << "8: closeSend took over " << kCloseBoundMs << " ms with the peer idle; 10: "
                     << "the last close took over " << kLastCloseBoundMs << " ms";
  EXPECT_TRUE(net.closeRecv(a.recv).ok());
  EXPECT_TRUE(net.closeListen(a.listen).ok());
}

constexpr size_t kLargeMessage = size_t{256} << 20;  // long enough on loopback to close within

/// Child side of the rendezvous test: dial, send one large message of 'x', and test it to the end
/// (the parent closes its receive in the middle; the data still flows while either side
/// progresses), then close.
[[noreturn]] void dialSendLarge(int handleFd) {
  Dialled d;
  dialParent(handleFd, false, &d);
  PluginNet& net = *d.net;
  std::vector<char> out(kLargeMessage, 'x');
  void* req = nullptr;
  while (req == nullptr)
    if (!net.isend(d.send, out.data(), out.size(), 1, nullptr, &req).ok()) _exit(5);
  int done = 0;
  for (const auto t0 = Clock::now(); !done;) {
    if (!net.test(req, 1, &done, nullptr).ok()) break;  // the parent's close may end it
    if (msSince(t0) > 30000) _exit(6);
  }
  (void)net.closeSend(d.send);
  _exit(0);
}

TEST(UcxNetRendezvous, CloseRecvInTheMiddleLeavesTheBufferAlone) {
  Accepted a;
  ASSERT_NO_FATAL_FAILURE(forkAndAccept(dialSendLarge, &a));
  PluginNet& net = *a.net;
  std::vector<char> in(kLargeMessage, 0);
  void* req = postRecv(net, a.recv, in);
  ASSERT_NE(req, nullptr);
  // Progress until the first fragment is in, then close with the rest still on its way.
  int done = 0;
  for (const auto t0 = Clock::now(); !done && in[0] == 0 && msSince(t0) < 20000;)
    ASSERT_TRUE(net.test(req, 1, &done, nullptr).ok());
  ASSERT_EQ(in[0], 'x') << "no fragment arrived";
  if (done || in.back() != 0) GTEST_SKIP() << "the whole message arrived before the close could be tried";
  ASSERT_TRUE(net.closeRecv(a.recv).ok());
  // The link frees its ring here; a zeroed buffer stands for memory in other use. Progress the
  // worker (accept does) while the sender goes on: nothing may land in the buffer any more.
  std::memset(in.data(), 0, in.size());
  void* none = nullptr;
  for (const auto p0 = Clock::now(); msSince(p0) < 1500;) ASSERT_TRUE(net.accept(a.listen, &none).ok());
  const size_t written = static_cast<size_t>(std::count_if(in.begin(), in.end(), [](char c) { return c != 0; }));
  EXPECT_EQ(written, 0u) << "bytes written into a closed receive's buffer";
  EXPECT_EQ(reap(a.child), 0) << "the sender failed";
  EXPECT_TRUE(net.closeListen(a.listen).ok());
}

INSTANTIATE_TEST_SUITE_P(FreshOrUsedEndpoint, UcxNet, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "AfterASend" : "Unused"; });

}  // namespace
