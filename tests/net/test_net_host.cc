// The net plugin host (transports/net/net_plugin.h) against the in-tree test plugin, built as ABI
// v8, v10 and v11 (tests/net/test_net_plugin.cc): the search rules, version adaptation, fallback
// on init failure and on zero devices, and a loopback transfer through each version that meets
// every contract edge the test plugin plays (null comms until connected, null requests, unset
// sizes, grouped receives, the struct renamed in init).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <climits>
#include <cstring>
#include <thread>
#include <string>
#include <vector>

#include "tests/common/saved_env.h"
#include "transports/net/net_abi.h"
#include "transports/net/net_link.h"
#include "transports/net/net_plugin.h"
#include "transports/net/net_proxy.h"

namespace {

using atl::net::LoadResult;
using atl::net::PluginNet;

struct Variant {
  const char* path;
  int version;
};
const Variant kVariants[] = {{ATOLL_TESTNET_V8, 8}, {ATOLL_TESTNET_V10, 10}, {ATOLL_TESTNET_V11, 11}};

bool triedHas(const LoadResult& r, const std::string& text) {
  for (const std::string& line : r.tried)
    if (line.find(text) != std::string::npos) return true;
  return false;
}

/// Calls `step` until it yields (a bounded number of times, so a plugin that never finishes fails).
template <class F>
int retry(F step) {
  for (int calls = 1; calls <= 1000; ++calls)
    if (step()) return calls;
  ADD_FAILURE() << "never completed";
  return -1;
}

/// Connects and accepts on `listenComm` (whose handle is `handle`) until both comms exist; the
/// number of rounds it took.
int connectPair(PluginNet& net, char* handle, void* listenComm, void** sendComm, void** recvComm) {
  *sendComm = *recvComm = nullptr;
  return retry([&] {
    if (*sendComm == nullptr) {
      EXPECT_TRUE(net.connect(0, handle, sendComm).ok());
    }
    if (*recvComm == nullptr) {
      EXPECT_TRUE(net.accept(listenComm, recvComm).ok());
    }
    return *sendComm != nullptr && *recvComm != nullptr;
  });
}

TEST(NetPluginHost, LoadsEachVersionAndReadsItsProperties) {
  for (const Variant& v : kVariants) {
    LoadResult r = atl::net::loadPlugins(v.path);
    ASSERT_EQ(r.nets.size(), 1u) << v.path;
    const PluginNet& net = *r.nets[0];
    EXPECT_EQ(net.version(), v.version);
    EXPECT_EQ(net.name(), "AtollTest") << "the name is read again after init, which rewrote it";
    EXPECT_EQ(net.library(), v.path);
    ASSERT_EQ(net.devices().size(), 2u);
    const atl::net::DeviceProps& d1 = net.devices()[1];
    EXPECT_EQ(d1.name, "testnic1");
    EXPECT_EQ(d1.pciPath, "/sys/devices/pci0000:00/0000:00:05.0");
    EXPECT_EQ(d1.guid, 0x1001u);
    EXPECT_EQ(d1.ptrSupport, atl::net::abi::kPtrHost);
    EXPECT_EQ(d1.speedMbps, 200000);
    EXPECT_FLOAT_EQ(d1.latencyUs, 1.5f);
    EXPECT_EQ(d1.maxRecvs, 4);
    EXPECT_EQ(d1.maxP2pBytes, v.version >= 9 ? size_t{1} << 31 : size_t{INT_MAX});
    EXPECT_TRUE(triedHas(r, "ncclNetPlugin_v" + std::to_string(v.version))) << v.path;
  }
}

TEST(NetPluginHost, LoopbackTransferThroughEveryVersion) {
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(v.path);
    LoadResult r = atl::net::loadPlugins(v.path);
    ASSERT_EQ(r.nets.size(), 1u);
    PluginNet& net = *r.nets[0];
    char handle[atl::net::abi::kHandleMaxSize] = {};
    void* listenComm = nullptr;
    ASSERT_TRUE(net.listen(0, handle, &listenComm).ok());
    void* sendComm = nullptr;
    void* recvComm = nullptr;
    const int calls = connectPair(net, handle, listenComm, &sendComm, &recvComm);
    EXPECT_GT(calls, 1) << "the plugin returns null comms first; the host must call again";

    std::vector<char> a(1000, 'a'), b(77, 'b'), c(4096, 'c');
    void *mhSend = nullptr, *mhRecv = nullptr;
    ASSERT_TRUE(net.regMr(sendComm, c.data(), c.size(), atl::net::abi::kPtrHost, &mhSend).ok());
    std::vector<char> ra(1000), rb(100), rc(4096);
    ASSERT_TRUE(net.regMr(recvComm, rc.data(), rc.size(), atl::net::abi::kPtrHost, &mhRecv).ok());

    // Three sends (tags 1, 2, 3); each retried while the plugin hands back a null request.
    struct Out {
      std::vector<char>* buf;
      int tag;
    };
    for (Out o : {Out{&a, 1}, Out{&b, 2}, Out{&c, 3}}) {
      void* req = nullptr;
      retry([&] {
        EXPECT_TRUE(net.isend(sendComm, o.buf->data(), o.buf->size(), o.tag, mhSend, &req).ok());
        return req != nullptr;
      });
      int done = 0, size = 0;
      retry([&] {
        EXPECT_TRUE(net.test(req, 1, &done, &size).ok());
        return done != 0;
      });
      EXPECT_EQ(size, -1) << "a send's size left unset by the plugin reads -1";
    }
    // One grouped receive of two buffers (tags 2 and 1, out of order), then one of one.
    void* data2[2] = {rb.data(), ra.data()};
    const size_t sizes2[2] = {rb.size(), ra.size()};
    const int tags2[2] = {2, 1};
    void* mh2[2] = {mhRecv, mhRecv};
    void* req = nullptr;
    retry([&] {
      EXPECT_TRUE(net.irecv(recvComm, 2, data2, sizes2, tags2, mh2, &req).ok());
      return req != nullptr;
    });
    int done = 0, got[2] = {0, 0};
    retry([&] {
      EXPECT_TRUE(net.test(req, 2, &done, got).ok());
      return done != 0;
    });
    EXPECT_EQ(got[0], 77);
    EXPECT_EQ(got[1], 1000);
    EXPECT_EQ(std::string(rb.data(), 77), std::string(77, 'b'));
    EXPECT_EQ(ra, a);
    void* data1[1] = {rc.data()};
    const size_t sizes1[1] = {rc.size()};
    const int tags1[1] = {3};
    void* mh1[1] = {mhRecv};
    retry([&] {
      EXPECT_TRUE(net.irecv(recvComm, 1, data1, sizes1, tags1, mh1, &req).ok());
      return req != nullptr;
    });
    retry([&] {
      EXPECT_TRUE(net.test(req, 1, &done, got).ok());
      return done != 0;
    });
    EXPECT_EQ(got[0], 4096);
    EXPECT_EQ(rc, c);

    if (v.version <= 8) {  // int sizes: a transfer above INT_MAX is refused before the plugin sees it
      void* big = nullptr;
      EXPECT_EQ(net.isend(sendComm, c.data(), size_t{3} << 30, 9, mhSend, &big).code(), ncclInvalidArgument);
      EXPECT_EQ(big, nullptr);
    }
    EXPECT_TRUE(net.deregMr(sendComm, mhSend).ok());
    EXPECT_TRUE(net.deregMr(recvComm, mhRecv).ok());
    EXPECT_TRUE(net.closeSend(sendComm).ok());
    EXPECT_TRUE(net.closeRecv(recvComm).ok());
    EXPECT_TRUE(net.closeListen(listenComm).ok());
  }
}

// A net whose close cannot stop a receive it has begun (UCX's matched rendezvous) fails the close;
// the link must then keep its ring, which the transfer goes on writing. The ring is large enough to
// be its own mapping, so writing into it once freed faults in any build (ASan reports it anyway).
TEST(NetPluginHost, LinkKeepsItsRingWhenTheCloseLeavesAReceiveBehind) {
  atl::test::SavedEnv env;
  env.save({"ATOLL_TESTNET_STRAND_RECVS"});
  setenv("ATOLL_TESTNET_STRAND_RECVS", "1", 1);
  LoadResult r = atl::net::loadPlugins(ATOLL_TESTNET_V11);
  ASSERT_EQ(r.nets.size(), 1u);
  PluginNet& net = *r.nets[0];
  atl::net::Proxy proxy;
  char handle[atl::net::abi::kHandleMaxSize] = {};
  void* listenComm = nullptr;
  ASSERT_TRUE(net.listen(0, handle, &listenComm).ok());
  void* sendComm = nullptr;
  void* recvComm = nullptr;
  connectPair(net, handle, listenComm, &sendComm, &recvComm);
  ASSERT_TRUE(net.closeListen(listenComm).ok());
  {
    auto link = atl::net::NetLink::create({&net, &proxy, sendComm, recvComm, 0, "the test"}, 0, 1, 0, size_t{64} << 20);
    ASSERT_TRUE(link.ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the proxy posts the receives
  }  // closeRecv fails with them posted
  // The next listen writes into every stranded receive buffer, as the late fragments would.
  ASSERT_TRUE(net.listen(0, handle, &listenComm).ok());
  EXPECT_TRUE(net.closeListen(listenComm).ok());
}

TEST(NetPluginHost, V11ContextIsFinalisedWithTheNet) {
  void* dl = dlopen(ATOLL_TESTNET_V11, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(dl, nullptr);
  auto live = reinterpret_cast<int (*)()>(dlsym(dl, "atollTestNetLiveContexts"));
  ASSERT_NE(live, nullptr);
  const int before = live();
  {
    LoadResult r = atl::net::loadPlugins(ATOLL_TESTNET_V11);
    ASSERT_EQ(r.nets.size(), 1u);
    EXPECT_EQ(live(), before + 1);
  }
  EXPECT_EQ(live(), before);
}

TEST(NetPluginHost, InitFailureAndNoDeviceAreSkipped) {
  atl::test::SavedEnv env;
  env.save({"ATOLL_TESTNET_FAIL_INIT", "ATOLL_TESTNET_NDEVS"});
  setenv("ATOLL_TESTNET_FAIL_INIT", "1", 1);
  LoadResult failed = atl::net::loadPlugins(ATOLL_TESTNET_V10);
  EXPECT_TRUE(failed.nets.empty());
  EXPECT_TRUE(triedHas(failed, "init failed")) << (failed.tried.empty() ? "" : failed.tried[0]);
  unsetenv("ATOLL_TESTNET_FAIL_INIT");
  setenv("ATOLL_TESTNET_NDEVS", "0", 1);
  LoadResult none = atl::net::loadPlugins(ATOLL_TESTNET_V11);
  EXPECT_TRUE(none.nets.empty());
  EXPECT_TRUE(triedHas(none, "no device"));
  env.restore();
}

TEST(NetPluginHost, SearchRules) {
  // "none" anywhere in the list disables external plugins.
  LoadResult off = atl::net::loadPlugins(std::string(ATOLL_TESTNET_V8) + ",none");
  EXPECT_TRUE(off.nets.empty());
  EXPECT_TRUE(triedHas(off, "disabled"));
  // Unset: libnccl-net.so, which is not installed here.
  LoadResult unset = atl::net::loadPlugins("");
  EXPECT_TRUE(unset.nets.empty());
  EXPECT_TRUE(triedHas(unset, "libnccl-net.so"));
  // A list: entries that fail are noted, the others load, in order.
  LoadResult list = atl::net::loadPlugins(std::string("no-such-plugin , ") + ATOLL_TESTNET_V10 + "," + ATOLL_TESTNET_V8);
  ASSERT_EQ(list.nets.size(), 2u);
  EXPECT_EQ(list.nets[0]->version(), 10);
  EXPECT_EQ(list.nets[1]->version(), 8);
  EXPECT_TRUE(triedHas(list, "libnccl-net-no-such-plugin.so"));
  // NCCL_NET picks by name, case-insensitively; an unknown name picks nothing.
  EXPECT_EQ(atl::net::pickNet(list, "atolltest"), list.nets[0].get());
  EXPECT_EQ(atl::net::pickNet(list, ""), list.nets[0].get());
  EXPECT_EQ(atl::net::pickNet(list, "IB"), nullptr);
  // A bare name is tried as libnccl-net-<name>.so on the library path (LD_LIBRARY_PATH holds the
  // test plugins' directory, see net.cmake).
  LoadResult byName = atl::net::loadPlugins("atolltest");
  ASSERT_EQ(byName.nets.size(), 1u);
  EXPECT_EQ(byName.nets[0]->library(), "libnccl-net-atolltest.so");
  // A library without any ncclNetPlugin symbol.
  LoadResult wrong = atl::net::loadPlugins("libm.so.6");
  EXPECT_TRUE(wrong.nets.empty());
  EXPECT_TRUE(triedHas(wrong, "no ncclNetPlugin_v6 .. v12 symbol"));
}

}  // namespace
