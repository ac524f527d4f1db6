// The net transport's parts that need no second rank: the hello that routes accepted connections,
// and what a plugin device's properties do to the cost model. Links and data over plugins are
// tested end to end with real ranks (net_transport.cmake).
#include <gtest/gtest.h>

#include <cstring>

#include "core/comm_topology.h"
#include "transports/net/net_plugin.h"
#include "transports/net/net_transport.h"
#include "tuning/cost_model.h"

namespace {

atl::transport::Context context(int rank, int nranks) {
  atl::transport::Context ctx;
  ctx.rank = rank;
  ctx.nranks = nranks;
  ctx.commHash = 0x1234abcd;
  for (size_t i = 0; i < ctx.secret.size(); ++i) ctx.secret[i] = static_cast<uint8_t>(i * 7 + 1);
  return ctx;
}

TEST(NetTransportHello, ProvenHelloRoutesAndEverythingElseIsRefused) {
  const atl::transport::Context from = context(2, 4), to = context(1, 4);
  const atl::net::Hello h = atl::net::makeHello(from, 1, 3);
  EXPECT_EQ(atl::net::checkHello(h, to), nullptr);
  EXPECT_EQ(h.from, 2);
  EXPECT_EQ(h.channel, 3);

  EXPECT_STREQ(atl::net::checkHello(h, context(0, 4)), "a hello for another rank");
  atl::transport::Context otherComm = to;
  otherComm.commHash ^= 1;
  EXPECT_STREQ(atl::net::checkHello(h, otherComm), "a hello for another communicator");
  atl::transport::Context otherSecret = to;
  otherSecret.secret[0] ^= 1;
  EXPECT_STREQ(atl::net::checkHello(h, otherSecret), "a hello without the communicator's proof");

  atl::net::Hello forged = h;
  forged.channel = 4;  // a stranger cannot re-route a captured hello to another link
  EXPECT_STREQ(atl::net::checkHello(forged, to), "a hello without the communicator's proof");
  forged = h;
  forged.magic ^= 1;
  EXPECT_STREQ(atl::net::checkHello(forged, to), "not an Atoll net hello");
  forged = h;
  forged.from = 9;
  EXPECT_STREQ(atl::net::checkHello(forged, to), "a malformed hello");
  EXPECT_STREQ(atl::net::checkHello(atl::net::makeHello(to, 1, 0), to), "a malformed hello");  // from itself
}

std::vector<atl::topo::RankDesc> twoHosts() {
  std::vector<atl::topo::RankDesc> ranks(4);
  for (size_t r = 0; r < ranks.size(); ++r) {
    ranks[r].hostHash = r < 2 ? 0xa : 0xb;
    atl::topo::setHostName(&ranks[r], r < 2 ? "hostA" : "hostB");
    ranks[r].nics = 1;
  }
  return ranks;
}

TEST(NetTransportCost, PluginDevicePricesTheLinksBetweenHosts) {
  const auto ranks = twoHosts();
  auto placement = atl::topo::commPlacement(ranks);
  ASSERT_TRUE(placement.ok());
  const atl::LinkChoice sockets = atl::chooseLinks(ranks, *placement);
  EXPECT_STREQ(sockets.remote, "socket");

  atl::net::DeviceProps dev;
  dev.speedMbps = 200000;  // 200 Gb/s
  dev.latencyUs = 1.5f;
  const atl::LinkChoice viaNet = atl::chooseLinks(ranks, *placement, &dev, "AtollTest");
  EXPECT_STREQ(viaNet.remote, "AtollTest");
  EXPECT_DOUBLE_EQ(viaNet.fabric.inter.bwGBs, 25.0);
  EXPECT_DOUBLE_EQ(viaNet.fabric.inter.latUs, 1.5);
  // Inside a host the links stay shared memory, priced as before.
  EXPECT_DOUBLE_EQ(viaNet.fabric.intra.bwGBs, sockets.fabric.intra.bwGBs);

  // A figure the plugin leaves at 0 keeps the socket model's.
  atl::net::DeviceProps silent;
  const atl::LinkChoice unknown = atl::chooseLinks(ranks, *placement, &silent, "Quiet");
  EXPECT_DOUBLE_EQ(unknown.fabric.inter.bwGBs, sockets.fabric.inter.bwGBs);
  EXPECT_DOUBLE_EQ(unknown.fabric.inter.latUs, sockets.fabric.inter.latUs);
}

}  // namespace
