// The records ranks publish at the rendezvous (PeerInfo, RankDesc) travel field by field through
// base/wire_codec.h: they must round-trip exactly, and a short or long record must be detected
// rather than read as garbage.
#include <gtest/gtest.h>

#include <cstring>

#include "base/socket.h"
#include "base/wire_codec.h"
#include "topology/islands.h"
#include "transports/transport.h"

namespace atl {
namespace {

transport::PeerInfo samplePeer(const char* hostPort) {
  transport::PeerInfo p;
  p.rank = 7;
  p.pid = 123456;
  p.hostHash = 0x0123456789abcdefull;
  p.cudaDev = -1;
  p.flags = transport::kPeerAllowsShm;
  std::strncpy(p.hostname, "node-17.cluster", sizeof(p.hostname) - 1);
  Result<net::SockAddr> a = net::parseHostPort(hostPort);
  EXPECT_TRUE(a.ok()) << hostPort;
  if (a.ok()) p.dataAddr = *a;
  for (size_t i = 0; i < p.dataChallenge.size(); ++i) p.dataChallenge[i] = static_cast<uint8_t>(0xa0 + i);
  return p;
}

void expectSamePeer(const transport::PeerInfo& a, const transport::PeerInfo& b) {
  EXPECT_EQ(a.rank, b.rank);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.hostHash, b.hostHash);
  EXPECT_EQ(a.cudaDev, b.cudaDev);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_STREQ(a.hostname, b.hostname);
  EXPECT_EQ(a.dataAddr.toString(), b.dataAddr.toString());
  EXPECT_EQ(a.dataChallenge, b.dataChallenge);
}

TEST(WireCodec, PeerInfoRoundTripsIpv4AndIpv6) {
  for (const char* addr : {"10.1.2.3:40001", "[fd00::17]:5000"}) {
    const transport::PeerInfo in = samplePeer(addr);
    codec::Writer w;
    transport::encodePeerInfo(w, in);
    codec::Reader r(w.data());
    const transport::PeerInfo out = transport::decodePeerInfo(r);
    EXPECT_TRUE(r.finished()) << addr;
    expectSamePeer(in, out);
  }
}

TEST(WireCodec, RankDescRoundTrips) {
  topo::RankDesc in;
  in.hostHash = 42;
  in.islandId = 3;
  in.islandSize = 8;
  in.numaNodes = 2;
  in.gpus = 8;
  in.nics = 4;
  in.netGBs = 48.5f;
  topo::setHostName(&in, "gpu-host-0042");
  codec::Writer w;
  topo::encodeRankDesc(w, in);
  codec::Reader r(w.data());
  const topo::RankDesc out = topo::decodeRankDesc(r);
  EXPECT_TRUE(r.finished());
  EXPECT_EQ(out.hostHash, in.hostHash);
  EXPECT_EQ(out.islandId, in.islandId);
  EXPECT_EQ(out.islandSize, in.islandSize);
  EXPECT_EQ(out.numaNodes, in.numaNodes);
  EXPECT_EQ(out.gpus, in.gpus);
  EXPECT_EQ(out.nics, in.nics);
  EXPECT_EQ(out.netGBs, in.netGBs);
  EXPECT_STREQ(out.hostName, in.hostName);
}

TEST(WireCodec, ShortAndLongRecordsAreDetected) {
  codec::Writer w;
  transport::encodePeerInfo(w, samplePeer("127.0.0.1:1"));
  std::vector<std::byte> bytes = w.data();
  for (size_t cut : {size_t{0}, size_t{1}, bytes.size() / 2, bytes.size() - 1}) {
    codec::Reader r(std::span(bytes.data(), cut));
    (void)transport::decodePeerInfo(r);
    EXPECT_FALSE(r.ok()) << "a record cut to " << cut << " bytes read as whole";
    EXPECT_FALSE(r.finished());
  }
  bytes.push_back(std::byte{0});
  codec::Reader r(bytes);
  (void)transport::decodePeerInfo(r);
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(r.finished()) << "a trailing byte went unnoticed";
}

TEST(WireCodec, HostnameIsAlwaysTerminated) {
  // A peer that fills the whole field (no NUL) must still decode to a C string.
  codec::Writer w;
  transport::PeerInfo p = samplePeer("127.0.0.1:1");
  std::memset(p.hostname, 'x', sizeof(p.hostname));
  transport::encodePeerInfo(w, p);
  codec::Reader r(w.data());
  const transport::PeerInfo out = transport::decodePeerInfo(r);
  EXPECT_TRUE(r.finished());
  EXPECT_EQ(std::strlen(out.hostname), sizeof(out.hostname) - 1);
}

}  // namespace
}  // namespace atl
