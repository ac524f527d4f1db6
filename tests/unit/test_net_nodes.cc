// topology/net_nodes.h: net devices hung in the graph by their sysfs path, the device each rank
// takes, and the descriptor counting the devices a host shares.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/hand_graph.h"
#include "topology/graph.h"
#include "topology/islands.h"
#include "topology/net_nodes.h"
#include "topology/sysfs.h"

using atl::topo::test::add;

namespace {

// Two sockets. Socket 0: a PCI switch with gpu0 and nicA. Socket 1: a switch with gpu1 and nicB,
// and nicC directly below the CPU.
struct TwoSockets {
  Graph g;
  int cpu0, cpu1, sw0, sw1, gpu0, gpu1, nicA, nicB, nicC;
  TwoSockets() {
    cpu0 = add(&g, NodeType::Cpu, "cpu0", 0);
    cpu1 = add(&g, NodeType::Cpu, "cpu1", 1);
    g.addLink(cpu0, cpu1, LinkType::Smp, 40, 0.6);
    sw0 = add(&g, NodeType::Pci, "0000:10:00.0", 0);
    sw1 = add(&g, NodeType::Pci, "0000:80:00.0", 1);
    g.addLink(cpu0, sw0, LinkType::Pci, 24, 0.5);
    g.addLink(cpu1, sw1, LinkType::Pci, 24, 0.5);
    gpu0 = add(&g, NodeType::Gpu, "0000:11:00.0", 0, 0);
    nicA = add(&g, NodeType::Nic, "0000:12:00.0", 0);
    gpu1 = add(&g, NodeType::Gpu, "0000:81:00.0", 1, 1);
    nicB = add(&g, NodeType::Nic, "0000:82:00.0", 1);
    nicC = add(&g, NodeType::Nic, "0000:90:00.0", 1);
    g.addLink(sw0, gpu0, LinkType::Pci, 24, 0.5);
    g.addLink(sw0, nicA, LinkType::Pci, 24, 0.5);
    g.addLink(sw1, gpu1, LinkType::Pci, 24, 0.5);
    g.addLink(sw1, nicB, LinkType::Pci, 24, 0.5);
    g.addLink(cpu1, nicC, LinkType::Pci, 24, 0.5);
  }
};

topo::NetDeviceDesc dev(const std::string& name, const std::string& pciPath, double gbps) {
  return topo::NetDeviceDesc{name, pciPath, gbps * 1000, 2.0, 1};
}

int parentOf(const Graph& g, int node) {
  EXPECT_EQ(g.linksOf(node).size(), 1u);
  return g.other(g.linksOf(node).front(), node);
}

}  // namespace

TEST(NetNodes, BusIdIsTheLastPciComponentOfThePath) {
  EXPECT_EQ(topo::sysfs::busIdInPath("/sys/devices/pci0000:00/0000:00:02.0/0000:03:00.1"), "0000:03:00.1");
  EXPECT_EQ(topo::sysfs::busIdInPath("/sys/devices/pci0000:00/0000:00:03.0/virtio2"), "0000:00:03.0");
  EXPECT_EQ(topo::sysfs::busIdInPath("/sys/devices/virtual/net/lo"), "");
  EXPECT_EQ(topo::sysfs::busIdInPath(""), "");
  EXPECT_EQ(topo::sysfs::cpulistCpus("0-2,5,7-8"), (std::vector<int>{0, 1, 2, 5, 7, 8}));
  EXPECT_EQ(topo::sysfs::cpulistCount("0-2,5,7-8"), 6);
}

TEST(NetNodes, DevicesHangBelowTheirNicsWithTheirSpeed) {
  TwoSockets t;
  const std::vector<topo::NetDeviceDesc> devs = {
      dev("mlx5_0", "/sys/devices/pci0000:10/0000:10:00.0/0000:12:00.0", 200),
      dev("mlx5_1", "/sys/devices/pci0000:80/0000:80:00.0/0000:82:00.0", 400),
      dev("veth", "", 0),
      dev("ghost", "/sys/devices/pci0000:ee/0000:ee:00.0/0000:ef:00.0", 100)};
  const std::vector<int> nodes = topo::addNetDevices(&t.g, devs);
  ASSERT_EQ(nodes.size(), 4u);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const topo::Node& n = t.g.node(nodes[i]);
    EXPECT_EQ(n.type, NodeType::Net);
    EXPECT_EQ(n.name, devs[i].name);
    EXPECT_EQ(n.index, static_cast<int>(i));
  }
  EXPECT_EQ(parentOf(t.g, nodes[0]), t.nicA);
  EXPECT_EQ(parentOf(t.g, nodes[1]), t.nicB);
  EXPECT_EQ(t.g.node(nodes[1]).numa, 1);
  EXPECT_DOUBLE_EQ(t.g.node(nodes[1]).speedMbps, 400000);
  // A virtual device and one on a PCI function the graph lacks (and /sys too) hang below a CPU.
  EXPECT_EQ(t.g.node(parentOf(t.g, nodes[2])).type, NodeType::Cpu);
  EXPECT_EQ(t.g.node(parentOf(t.g, nodes[3])).type, NodeType::Cpu);
  // The NIC-to-device hop is the port: local to the path class, priced at the device's speed.
  const topo::Path p = t.g.path(t.gpu0, nodes[0]);
  EXPECT_EQ(p.type, PathType::Pix);
  EXPECT_DOUBLE_EQ(p.bwGBs, 24.0);
  EXPECT_EQ(t.g.path(t.cpu1, nodes[1]).type, PathType::Phb);
  EXPECT_EQ(t.g.path(t.gpu0, nodes[1]).type, PathType::Sys);
  // An unknown speed is NCCL's socket default, not 0 (which would make it every path's bottleneck).
  EXPECT_DOUBLE_EQ(t.g.path(t.cpu0, nodes[2]).bwGBs, 1.25);
}

TEST(NetNodes, EachGpuTakesItsNearestDeviceBeforeAFasterFarOne) {
  TwoSockets t;
  const std::vector<topo::NetDeviceDesc> devs = {
      dev("nicA", "/sys/devices/pci0000:10/0000:10:00.0/0000:12:00.0", 100),
      dev("nicB", "/sys/devices/pci0000:80/0000:80:00.0/0000:82:00.0", 400)};
  const std::vector<int> nodes = topo::addNetDevices(&t.g, devs);
  EXPECT_EQ(topo::rankAnchor(t.g, 0, -1), t.gpu0);
  EXPECT_EQ(topo::rankAnchor(t.g, 1, 0), t.gpu1);
  const topo::NetChoice g0 = topo::nearestNetDevice(t.g, topo::rankAnchor(t.g, 0, -1), nodes, 0);
  EXPECT_EQ(g0.device, 0);  // PIX at 100 Gb/s beats SYS at 400
  EXPECT_EQ(g0.path.type, PathType::Pix);
  EXPECT_EQ(g0.equals, 1);
  EXPECT_EQ(topo::nearestNetDevice(t.g, topo::rankAnchor(t.g, 1, -1), nodes, 1).device, 1);
  // Host buffers: the CPU of the rank's NUMA node decides; a GPU index the graph lacks too.
  EXPECT_EQ(topo::rankAnchor(t.g, -1, 1), t.cpu1);
  EXPECT_EQ(topo::rankAnchor(t.g, 7, 1), t.cpu1);
  EXPECT_EQ(topo::nearestNetDevice(t.g, t.cpu1, nodes, 0).device, 1);
  EXPECT_EQ(topo::nearestNetDevice(t.g, t.cpu0, nodes, 3).device, 0);
}

TEST(NetNodes, EquallyNearDevicesAreSharedOutAndTheFasterWins) {
  TwoSockets t;
  // nicB and nicC on socket 1, both PHB from cpu1; two ports of one NIC model report 1% apart.
  const std::vector<topo::NetDeviceDesc> devs = {
      dev("a", "/sys/devices/pci0000:10/0000:10:00.0/0000:12:00.0", 100),
      dev("b", "/sys/devices/pci0000:80/0000:80:00.0/0000:82:00.0", 100),
      dev("c", "/sys/devices/pci0000:90/0000:90:00.0", 99.5)};
  const std::vector<int> nodes = topo::addNetDevices(&t.g, devs);
  std::vector<int> picked;
  for (int spread = 0; spread < 4; ++spread) {
    const topo::NetChoice c = topo::nearestNetDevice(t.g, t.cpu1, nodes, spread);
    EXPECT_EQ(c.equals, 2);
    picked.push_back(c.device);
  }
  EXPECT_EQ(picked, (std::vector<int>{1, 2, 1, 2}));
  // Of two devices equally placed, a clearly faster one is taken by every rank.
  TwoSockets u;
  const std::vector<topo::NetDeviceDesc> fast = {dev("slow", "/sys/devices/pci0000:90/0000:90:00.0", 25),
                                                 dev("fast", "/sys/devices/pci0000:90/0000:90:00.0", 200)};
  const std::vector<int> fastNodes = topo::addNetDevices(&u.g, fast);
  for (int spread = 0; spread < 3; ++spread) EXPECT_EQ(topo::nearestNetDevice(u.g, u.cpu1, fastNodes, spread).device, 1);
}

TEST(NetNodes, TheHostDescriptorCountsTheNetsDevicesNotEveryNic) {
  TwoSockets t;
  EXPECT_EQ(topo::localRankDesc(&t.g).nics, 3);
  const std::vector<topo::NetDeviceDesc> devs = {dev("b", "/sys/devices/pci0000:80/0000:80:00.0/0000:82:00.0", 400)};
  topo::addNetDevices(&t.g, devs);
  const topo::RankDesc d = topo::localRankDesc(&t.g);
  EXPECT_EQ(d.nics, 1);
  EXPECT_FLOAT_EQ(d.netGBs, 50.0f);
}
