// NCCL_TOPO_FILE inputs as they ship (tests/unit/topology_fixtures/README.md names the sources): what
// the loaded graph holds, and the shapes those files use (a <nic> with no busid under a <cpu>, devices
// given only as a classed <pci> leaf, CPUs that NCCL's format never links) next to the malformed
// variants that must still fail.
#include <gtest/gtest.h>

#include <string>

#include "base/status.h"
#include "tests/unit/topology_xml_errors.h"
#include "tests/unit/hand_graph.h"
#include "topology/graph.h"
#include "topology/topo_xml.h"

#ifndef ATOLL_TOPO_FIXTURES
#error "tests/unit/topology.cmake defines ATOLL_TOPO_FIXTURES"
#endif


namespace {

atl::Result<Graph> fixture(const char* name) {
  return topo::readTopologyFile(std::string(ATOLL_TOPO_FIXTURES) + "/" + name);
}

// The one link joining a and b, or nullptr.
const topo::Link* linkBetween(const Graph& g, int a, int b) {
  const topo::Link* found = nullptr;
  for (int l : g.linksOf(a))
    if (g.other(l, a) == b) {
      if (found) return nullptr;
      found = &g.links()[static_cast<size_t>(l)];
    }
  return found;
}

int countLinks(const Graph& g, LinkType t) {
  int n = 0;
  for (const topo::Link& l : g.links()) n += l.type == t;
  return n;
}

// The device hangs off `parent` by the loader's default PCI link (the files give link_speed and
// link_width, which the loader does not read).
void expectPciChild(const Graph& g, int parent, int dev) {
  ASSERT_GE(parent, 0);
  ASSERT_GE(dev, 0);
  const topo::Link* l = linkBetween(g, parent, dev);
  ASSERT_NE(l, nullptr) << g.node(parent).id << " - " << g.node(dev).id;
  EXPECT_EQ(l->type, LinkType::Pci);
  EXPECT_DOUBLE_EQ(l->bwGBs, topo::kPciGen4x16GBs);
  EXPECT_DOUBLE_EQ(l->latUs, 0.5);
}

// What a loaded file dumps as must load back to the same graph (NCCL_TOPO_DUMP_FILE -> NCCL_TOPO_FILE).
void expectDumpReloads(const Graph& g) {
  auto back = topo::loadTopology(topo::dumpTopology(g));
  ASSERT_TRUE(back.ok()) << atl::lastErrorMessage() << "\n" << topo::dumpTopology(g);
  EXPECT_EQ(back->nodes().size(), g.nodes().size());
  EXPECT_EQ(back->links().size(), g.links().size());
  EXPECT_EQ(topo::dumpTopology(*back), topo::dumpTopology(g));
}

}  // namespace

// Azure NC A100 v4: one GPU per NUMA node and the VM's eth0 as a <nic> without busid under cpu 0.
TEST(TopologyFixtures, AzureNcv4NicUnderCpu) {
  auto g = fixture("azure_ncv4_topo.xml");
  ASSERT_TRUE(g.ok()) << atl::lastErrorMessage();
  ASSERT_EQ(g->ofType(NodeType::Cpu).size(), 4u);
  ASSERT_EQ(g->ofType(NodeType::Gpu).size(), 4u);
  ASSERT_EQ(g->ofType(NodeType::Nic).size(), 1u);
  for (int i = 0; i < 4; ++i) {
    const int cpu = g->find(NodeType::Cpu, "cpu" + std::to_string(i));
    const int gpu = g->find(NodeType::Gpu, "000" + std::to_string(i + 1) + ":00:00.0");
    ASSERT_GE(gpu, 0);
    EXPECT_EQ(g->node(gpu).index, i);
    EXPECT_EQ(g->node(gpu).numa, i);
    expectPciChild(*g, cpu, gpu);
  }
  const int cpu0 = g->find(NodeType::Cpu, "cpu0");
  const int nic = g->find(NodeType::Nic, "eth0");
  ASSERT_GE(nic, 0);
  EXPECT_EQ(g->node(nic).name, "eth0");
  EXPECT_EQ(g->node(nic).numa, 0);
  EXPECT_DOUBLE_EQ(g->node(nic).speedMbps, 100000);
  expectPciChild(*g, cpu0, nic);
  // Every <nvlink> there names its own GPU: no link. The four sockets are joined as NCCL joins them.
  EXPECT_EQ(countLinks(*g, LinkType::NvLink), 0);
  EXPECT_EQ(countLinks(*g, LinkType::Smp), 6);
  const int gpu0 = g->find(NodeType::Gpu, "0001:00:00.0"), gpu1 = g->find(NodeType::Gpu, "0002:00:00.0");
  ASSERT_TRUE(gpu0 >= 0 && gpu1 >= 0);
  EXPECT_EQ(g->path(gpu0, nic).type, PathType::Phb);
  EXPECT_DOUBLE_EQ(g->path(gpu0, nic).bwGBs, topo::kPciGen4x16GBs);
  EXPECT_EQ(g->path(gpu1, nic).type, PathType::Sys);
  EXPECT_EQ(g->path(gpu0, gpu1).type, PathType::Sys);
  expectDumpReloads(*g);
}

// Azure ND A100 v4: per NUMA node one switch over two GPUs (class 0x0302) and two HCAs (0x0207).
TEST(TopologyFixtures, AzureNdv4ClassedPciLeaves) {
  auto g = fixture("azure_ndv4_topo.xml");
  ASSERT_TRUE(g.ok()) << atl::lastErrorMessage();
  EXPECT_EQ(g->ofType(NodeType::Cpu).size(), 4u);
  EXPECT_EQ(g->ofType(NodeType::Pci).size(), 4u);
  EXPECT_EQ(g->ofType(NodeType::Gpu).size(), 8u);
  EXPECT_EQ(g->ofType(NodeType::Nic).size(), 8u);
  EXPECT_EQ(countLinks(*g, LinkType::Smp), 6);
  const int sw1 = g->find(NodeType::Pci, "ffff:ff:02.0");
  const int nic = g->find(NodeType::Nic, "0101:00:00.0"), near = g->find(NodeType::Gpu, "0001:00:00.0");
  const int far = g->find(NodeType::Gpu, "0003:00:00.0");
  ASSERT_TRUE(sw1 >= 0 && nic >= 0 && near >= 0 && far >= 0);
  expectPciChild(*g, g->find(NodeType::Cpu, "cpu1"), sw1);
  expectPciChild(*g, sw1, nic);
  expectPciChild(*g, sw1, near);
  EXPECT_EQ(g->node(nic).numa, 1);
  EXPECT_EQ(g->node(far).numa, 0);
  EXPECT_DOUBLE_EQ(g->node(nic).speedMbps, 0.0);  // the file gives no <net>
  EXPECT_EQ(g->path(near, nic).type, PathType::Pix);
  EXPECT_EQ(g->path(far, nic).type, PathType::Sys);
  expectDumpReloads(*g);
}

// AWS p4d.24xlarge: two switches per socket, each over two GPUs and one EFA NIC (class 0x020000).
TEST(TopologyFixtures, AwsP4dClassedPciLeaves) {
  auto g = fixture("aws_p4d_24xl_topo.xml");
  ASSERT_TRUE(g.ok()) << atl::lastErrorMessage();
  EXPECT_EQ(g->ofType(NodeType::Cpu).size(), 2u);
  EXPECT_EQ(g->ofType(NodeType::Pci).size(), 4u);
  EXPECT_EQ(g->ofType(NodeType::Gpu).size(), 8u);
  EXPECT_EQ(g->ofType(NodeType::Nic).size(), 4u);
  EXPECT_EQ(countLinks(*g, LinkType::Smp), 1);
  const int nic0 = g->find(NodeType::Nic, "0000:10:1b.0"), nic2 = g->find(NodeType::Nic, "0000:90:1b.0");
  const int gpu0 = g->find(NodeType::Gpu, "0000:10:1c.0"), gpu2 = g->find(NodeType::Gpu, "0000:20:1c.0");
  ASSERT_TRUE(nic0 >= 0 && nic2 >= 0 && gpu0 >= 0 && gpu2 >= 0);
  expectPciChild(*g, g->find(NodeType::Pci, "ffff:ff:01.0"), nic0);
  expectPciChild(*g, g->find(NodeType::Pci, "ffff:ff:03.0"), nic2);
  EXPECT_EQ(g->node(nic0).numa, 0);
  EXPECT_EQ(g->node(nic2).numa, 1);
  EXPECT_EQ(g->path(gpu0, nic0).type, PathType::Pix);
  EXPECT_EQ(g->path(gpu2, nic0).type, PathType::Phb);
  EXPECT_EQ(g->path(gpu0, nic2).type, PathType::Sys);
  expectDumpReloads(*g);
}

// NCCL gathers every NIC it finds no PCI device for into one <nic> under a <cpu>; each <net> is a NIC
// of its own, on that CPU's NUMA node.
TEST(TopologyXml, NicUnderCpuIsOneNicPerNet) {
  auto g = topo::loadTopology(R"(<system version="1">
  <cpu numaid="0"/>
  <cpu numaid="1"><nic><net name="eth0" speed="25000"/><net name="eth1" dev="1"/></nic></cpu>
</system>)");
  ASSERT_TRUE(g.ok()) << atl::lastErrorMessage();
  ASSERT_EQ(g->ofType(NodeType::Nic).size(), 2u);
  const int cpu1 = g->find(NodeType::Cpu, "cpu1");
  for (const char* name : {"eth0", "eth1"}) {
    const int nic = g->find(NodeType::Nic, name);
    ASSERT_GE(nic, 0) << name;
    EXPECT_EQ(g->node(nic).numa, 1) << name;
    expectPciChild(*g, cpu1, nic);
  }
  EXPECT_DOUBLE_EQ(g->node(g->find(NodeType::Nic, "eth0")).speedMbps, 25000);
  EXPECT_EQ(countLinks(*g, LinkType::Smp), 1);
  expectDumpReloads(*g);
}

TEST(TopologyXml, NicWithoutBusidErrors) {
  const topo::test::XmlErrorCase cases[] = {
      // No CPU to hang off, or a PCI switch, under which a NIC is a PCI device and needs its bus id.
      {"<system><nic><net name=\"eth0\"/></nic></system>", "missing busid"},
      {"<system><cpu numaid=\"0\"><pci busid=\"p\"><nic><net name=\"e\"/></nic><gpu busid=\"g\"/></pci></cpu></system>",
       "missing busid"},
      // Under a CPU the <net> names the NIC.
      {"<system><cpu numaid=\"0\"><nic/></cpu></system>", "needs a <net name"},
      {"<system><cpu numaid=\"0\"><nic><net speed=\"1\"/></nic></cpu></system>", "needs a <net name"},
      {"<system><cpu numaid=\"0\"><nic><net name=\"e\"/><net name=\"e\"/></nic></cpu></system>", "duplicate nic:e"},
      {"<system><cpu numaid=\"0\"><nic><net name=\"e\" speed=\"fast\"/></nic></cpu></system>", "non-negative"},
      {"<system><cpu numaid=\"0\"><nic link_bw=\"-1\"><net name=\"e\"/></nic></cpu></system>", "non-negative"},
      // A device class does not stand in for the bus id.
      {"<system><cpu numaid=\"0\"><pci class=\"0x030200\"/></cpu></system>", "missing busid"},
  };
  topo::test::expectXmlErrors(cases);
}
