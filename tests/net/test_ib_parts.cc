// The ibverbs net's parts that need no RDMA device: NCCL_IB_HCA parsing, the connection info both
// ends swap, and the credit and chunk state of its data path (transports/ib).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "transports/ib/ib_flow.h"
#include "transports/ib/ib_hca_list.h"
#include "transports/ib/ib_wire.h"

namespace ib = atl::net::ib;

namespace {

ib::HcaFilter parsed(const std::string& text) {
  ib::HcaFilter f;
  std::string why;
  EXPECT_TRUE(ib::parseHcaList(text, &f, &why)) << text << ": " << why;
  return f;
}

TEST(IbHcaList, PrefixExactExcludeAndPorts) {
  EXPECT_TRUE(parsed("").allows("mlx5_0", 1));  // unset: every port

  const ib::HcaFilter prefix = parsed("mlx5");
  EXPECT_TRUE(prefix.allows("mlx5_0", 1));
  EXPECT_TRUE(prefix.allows("mlx5_12", 2));
  EXPECT_FALSE(prefix.allows("bnxt_re0", 1));

  const ib::HcaFilter exact = parsed("=mlx5_1");
  EXPECT_TRUE(exact.allows("mlx5_1", 1));
  EXPECT_FALSE(exact.allows("mlx5_10", 1));  // a prefix match would take it

  const ib::HcaFilter ports = parsed(" mlx5_0:1 , mlx5_1:2 ");
  EXPECT_TRUE(ports.allows("mlx5_0", 1));
  EXPECT_FALSE(ports.allows("mlx5_0", 2));
  EXPECT_TRUE(ports.allows("mlx5_1", 2));
  EXPECT_FALSE(ports.allows("mlx5_2", 1));

  const ib::HcaFilter notTwo = parsed("^mlx5_2");
  EXPECT_TRUE(notTwo.allows("mlx5_0", 1));
  EXPECT_FALSE(notTwo.allows("mlx5_2", 1));
  EXPECT_FALSE(notTwo.allows("mlx5_20", 1));  // prefix
  const ib::HcaFilter notExactlyTwo = parsed("^=mlx5_2:1");
  EXPECT_TRUE(notExactlyTwo.allows("mlx5_20", 1));
  EXPECT_TRUE(notExactlyTwo.allows("mlx5_2", 2));
  EXPECT_FALSE(notExactlyTwo.allows("mlx5_2", 1));
}

TEST(IbHcaList, MalformedListsAreRefusedWithAReason) {
  for (const char* bad : {"mlx5_0:", "mlx5_0:x", "mlx5_0:0", "mlx5_0:256", ":1", "mlx5_0,,mlx5_1", "^", "=", "^="}) {
    ib::HcaFilter f;
    std::string why;
    EXPECT_FALSE(ib::parseHcaList(bad, &f, &why)) << bad;
    EXPECT_NE(why.find("NCCL_IB_HCA"), std::string::npos) << bad << ": " << why;
  }
}

ib::ConnInfo sample(int nqps) {
  ib::ConnInfo c;
  c.lid = 0x1234;
  c.port = 1;
  c.linkLayer = 2;
  c.mtu = 5;
  for (size_t i = 0; i < c.gid.size(); ++i) c.gid[i] = static_cast<uint8_t>(0xa0 + i);
  c.fifoAddr = 0x7f0012345000;
  c.fifoRkey = 0xdeadbeef;
  for (int q = 0; q < nqps; ++q) c.qps.push_back({static_cast<uint32_t>(0x100 + q), static_cast<uint32_t>(0xabc00 + q)});
  return c;
}

TEST(IbWire, RoundTripsAndRefusesWhatIsNotOne) {
  for (int nqps : {1, 4, ib::kMaxQps}) {
    const ib::ConnInfo c = sample(nqps);
    const std::vector<std::byte> bytes = ib::encodeConnInfo(c);
    ib::ConnInfo back;
    std::string why;
    ASSERT_TRUE(ib::decodeConnInfo(bytes, &back, &why)) << why;
    EXPECT_EQ(back, c);
  }
  const std::vector<std::byte> good = ib::encodeConnInfo(sample(2));
  auto refused = [](std::vector<std::byte> b, const char* expect) {
    ib::ConnInfo out;
    std::string why;
    EXPECT_FALSE(ib::decodeConnInfo(b, &out, &why)) << expect;
    EXPECT_NE(why.find(expect), std::string::npos) << why;
  };
  refused(std::vector<std::byte>(good.begin(), good.begin() + 10), "too short");
  refused(std::vector<std::byte>(good.begin(), good.end() - 4), "too short for its queue pairs");
  std::vector<std::byte> longer = good;
  longer.push_back(std::byte{0});
  refused(longer, "trailing bytes");
  std::vector<std::byte> magic = good;
  magic[0] ^= std::byte{1};
  refused(magic, "not an ibverbs net connection info");
  refused(ib::encodeConnInfo(sample(0)), "0 queue pairs");
  refused(ib::encodeConnInfo(sample(ib::kMaxQps + 1)), "17 queue pairs");
  ib::ConnInfo badQp = sample(1);
  badQp.qps[0].qpn = 0x1000000;  // 25 bits
  refused(ib::encodeConnInfo(badQp), "24-bit range");
  ib::ConnInfo badMtu = sample(1);
  badMtu.mtu = 9;
  refused(ib::encodeConnInfo(badMtu), "path MTU code 9");
}

TEST(IbFlow, CreditsStopAtTheFifoDepthAndSlotsWrap) {
  ib::CreditGrant credits;
  std::vector<ib::CreditGrant::Grant> grants;
  while (credits.canPost()) grants.push_back(credits.post());
  ASSERT_EQ(grants.size(), static_cast<size_t>(ib::kFifoDepth));
  EXPECT_EQ(grants[0].slot, 0);
  EXPECT_EQ(grants[0].seq, 1u);
  EXPECT_EQ(grants.back().slot, ib::kFifoDepth - 1);
  credits.complete();
  ASSERT_TRUE(credits.canPost());
  const ib::CreditGrant::Grant again = credits.post();
  EXPECT_EQ(again.slot, 0);  // the first slot, reused for the 33rd receive
  EXPECT_EQ(again.seq, static_cast<uint64_t>(ib::kFifoDepth) + 1);
  EXPECT_FALSE(credits.canPost());
}

TEST(IbFlow, TheSenderTakesSlotsInOrderOnlyOnceWritten) {
  std::vector<ib::FifoSlot> fifo(ib::kFifoDepth);
  std::memset(fifo.data(), 0, fifo.size() * sizeof(ib::FifoSlot));
  ib::FifoReader reader;
  EXPECT_FALSE(reader.take(fifo.data()));  // nothing posted
  ib::CreditGrant credits;
  auto write = [&](uint32_t size) {  // what the receiver's RDMA write does
    const ib::CreditGrant::Grant g = credits.post();
    fifo[static_cast<size_t>(g.slot)] = ib::FifoSlot{0x1000u * g.seq, 7, size, 3, 0, g.seq};
  };
  write(100);
  write(200);
  auto first = reader.take(fifo.data());
  ASSERT_TRUE(first);
  EXPECT_EQ(first->size, 100u);
  EXPECT_EQ(first->addr, 0x1000u);
  auto second = reader.take(fifo.data());
  ASSERT_TRUE(second);
  EXPECT_EQ(second->size, 200u);
  EXPECT_FALSE(reader.take(fifo.data()));
  // Around the ring: a slot still holding the previous lap's sequence is not taken again.
  credits.complete();
  credits.complete();
  for (int i = 2; i < ib::kFifoDepth; ++i) {
    write(static_cast<uint32_t>(i));
    ASSERT_TRUE(reader.take(fifo.data()));
    credits.complete();
  }
  EXPECT_FALSE(reader.take(fifo.data()));  // slot 0 holds seq 1, the reader wants 33
  write(4242);
  auto lap = reader.take(fifo.data());
  ASSERT_TRUE(lap);
  EXPECT_EQ(lap->size, 4242u);
  EXPECT_EQ(lap->seq, static_cast<uint64_t>(ib::kFifoDepth) + 1);
}

TEST(IbFlow, MessagesSplitOneChunkPerQueuePair) {
  auto check = [](size_t size, int nqps, size_t align, std::vector<size_t> lens) {
    const std::vector<ib::Chunk> chunks = ib::splitAcrossQps(size, nqps, align);
    ASSERT_EQ(chunks.size(), static_cast<size_t>(nqps));
    size_t offset = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      EXPECT_EQ(chunks[i].qp, static_cast<int>(i));
      EXPECT_EQ(chunks[i].offset, offset);
      EXPECT_EQ(chunks[i].len, lens[i]) << "size " << size << " chunk " << i;
      offset += chunks[i].len;
    }
    EXPECT_EQ(offset, size);
  };
  check(0, 1, 128, {0});
  check(0, 4, 128, {0, 0, 0, 0});  // an empty message still writes (its immediate) on every QP
  check(1, 4, 128, {1, 0, 0, 0});
  check(1000, 4, 128, {256, 256, 256, 232});
  check(1024, 4, 128, {256, 256, 256, 256});
  check(300, 4, 128, {128, 128, 44, 0});
  check(size_t{1} << 30, 16, 128, std::vector<size_t>(16, size_t{1} << 26));
}

TEST(IbFlow, AReceiveCompletesWhenEveryQueuePairDelivered) {
  ib::RecvProgress p(3);
  EXPECT_FALSE(p.arrived(1000));
  EXPECT_FALSE(p.arrived(1000));
  EXPECT_TRUE(p.arrived(1000));
  EXPECT_EQ(p.size(), 1000u);
}

}  // namespace
