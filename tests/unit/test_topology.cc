// topology/: path classes on hand-built graphs, detection on this host, XML round trip and errors,
// fabric files, island precedence, synthetic clusters.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "base/params.h"
#include "base/status.h"
#include "tests/unit/topology_xml_errors.h"
#include "topology/detect.h"
#include "topology/fabric.h"
#include "tests/unit/hand_graph.h"
#include "topology/graph.h"
#include "topology/islands.h"
#include "topology/summary.h"
#include "topology/synthetic.h"
#include "topology/topo_xml.h"
#include "topology/xml.h"

using atl::topo::test::add;

namespace {

// Two sockets; socket 0 has switch A (gpu0, gpu1, nic0) and switch B (gpu2) under a common switch;
// gpu0-gpu1 also share NVLink; socket 1 has gpu3 directly.
struct HandGraph {
  Graph g;
  int cpu0, cpu1, top, swA, swB, gpu0, gpu1, gpu2, gpu3, nic0;
  HandGraph() {
    cpu0 = add(&g, NodeType::Cpu, "cpu0", 0);
    cpu1 = add(&g, NodeType::Cpu, "cpu1", 1);
    g.addLink(cpu0, cpu1, LinkType::Smp, 40, 0.6);
    top = add(&g, NodeType::Pci, "0000:10:00.0");
    swA = add(&g, NodeType::Pci, "0000:11:00.0");
    swB = add(&g, NodeType::Pci, "0000:12:00.0");
    g.addLink(cpu0, top, LinkType::Pci, 24, 0.5);
    g.addLink(top, swA, LinkType::Pci, 24, 0.5);
    g.addLink(top, swB, LinkType::Pci, 24, 0.5);
    gpu0 = add(&g, NodeType::Gpu, "0000:21:00.0");
    gpu1 = add(&g, NodeType::Gpu, "0000:22:00.0");
    nic0 = add(&g, NodeType::Nic, "0000:23:00.0");
    gpu2 = add(&g, NodeType::Gpu, "0000:31:00.0");
    gpu3 = add(&g, NodeType::Gpu, "0000:41:00.0", 1);
    g.addLink(swA, gpu0, LinkType::Pci, 24, 0.5);
    g.addLink(swA, gpu1, LinkType::Pci, 24, 0.5);
    g.addLink(swA, nic0, LinkType::Pci, 24, 0.5);
    g.addLink(swB, gpu2, LinkType::Pci, 24, 0.5);
    g.addLink(cpu1, gpu3, LinkType::Pci, 24, 0.5);
    g.addLink(gpu0, gpu1, LinkType::NvLink, 100, 0.7, 4);
  }
};

std::string tempPath(const char* tag) {
  char buf[] = "/tmp/atoll_topo_XXXXXX";
  const int fd = mkstemp(buf);
  EXPECT_GE(fd, 0);
  if (fd >= 0) close(fd);
  return std::string(buf) + tag;
}

void writeFile(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

}  // namespace

TEST(TopologyPaths, ClassesOnHandBuiltGraph) {
  HandGraph h;
  const topo::Path nvl = h.g.path(h.gpu0, h.gpu1);
  EXPECT_EQ(nvl.type, PathType::Nvl);
  EXPECT_DOUBLE_EQ(nvl.bwGBs, 100);
  EXPECT_EQ(nvl.nodes.size(), 2u);
  EXPECT_EQ(h.g.path(h.gpu0, h.nic0).type, PathType::Pix);
  EXPECT_DOUBLE_EQ(h.g.path(h.gpu0, h.nic0).latUs, 1.0);
  EXPECT_EQ(h.g.path(h.gpu1, h.gpu2).type, PathType::Pxb);
  EXPECT_EQ(h.g.path(h.gpu0, h.cpu0).type, PathType::Phb);
  EXPECT_EQ(h.g.path(h.gpu0, h.gpu3).type, PathType::Sys);
  EXPECT_EQ(h.g.path(h.gpu3, h.gpu3).type, PathType::Loc);
  // Paths do not transit a GPU: without its NVLink gpu1 reaches gpu0 over PCI only.
  Graph g2 = h.g;
  const int orphan = add(&g2, NodeType::Gpu, "0000:99:00.0");
  EXPECT_EQ(g2.path(h.gpu0, orphan).type, PathType::Dis);
}

TEST(TopologyPaths, CpuHostBridgeIsPhb) {
  Graph g;
  const int cpu = add(&g, NodeType::Cpu, "cpu0");
  const int a = add(&g, NodeType::Gpu, "0000:01:00.0"), b = add(&g, NodeType::Nic, "0000:02:00.0");
  g.addLink(cpu, a, LinkType::Pci, 24, 0.5);
  g.addLink(cpu, b, LinkType::Pci, 12, 0.5);
  const topo::Path p = g.path(a, b);
  EXPECT_EQ(p.type, PathType::Phb);
  EXPECT_DOUBLE_EQ(p.bwGBs, 12);
}

TEST(TopologyPaths, AcrossHostsIsNet) {
  topo::ClusterSpec spec;
  spec.nodes = 2;
  spec.node.gpus = 4;
  spec.node.nics = 2;
  const Graph g = topo::syntheticClusterGraph(spec);
  const int a = g.find(NodeType::Gpu, "node0000/0000:11:00.0");
  const int a2 = g.find(NodeType::Gpu, "node0000/0000:21:00.0");
  const int b = g.find(NodeType::Gpu, "node0001/0000:11:00.0");
  ASSERT_GE(a, 0);
  ASSERT_GE(a2, 0);
  ASSERT_GE(b, 0);
  EXPECT_EQ(g.path(a, a2).type, PathType::Nvl);
  const topo::Path net = g.path(a, b);
  EXPECT_EQ(net.type, PathType::Net);
  EXPECT_DOUBLE_EQ(net.bwGBs, 400.0 / 8);
  // GPU -> switch -> NIC -> leaf -> NIC -> switch -> GPU.
  EXPECT_EQ(net.nodes.size(), 7u);
}

TEST(TopologyDetect, ThisHost) {
  topo::DetectInfo info;
  auto g = topo::detectLocal(&info);
  ASSERT_TRUE(g.ok()) << atl::lastErrorMessage();
  EXPECT_EQ(info.backend, topo::haveHwloc() ? "hwloc" : "sysfs");
  const std::vector<int> numa = g->ofType(NodeType::Numa);
  ASSERT_GE(numa.size(), 1u);
  ASSERT_EQ(g->ofType(NodeType::Cpu).size(), numa.size());
  int cpus = 0;
  for (int n : numa) cpus += g->node(n).ncpus;
  EXPECT_GE(cpus, 1);
  EXPECT_LE(cpus, 4096);
  const std::string text = topo::summarize(*g, &info) + topo::pathMatrix(*g);
  EXPECT_NE(text.find("NUMA node"), std::string::npos);
  // Every device hangs off a CPU, so every pair has a path.
  for (int d : g->ofType(NodeType::Nic)) EXPECT_NE(g->path(d, g->ofType(NodeType::Cpu)[0]).type, PathType::Dis);
}

TEST(TopologyDetect, SysfsFallbackAgreesWithBackend) {
  Graph g;
  ASSERT_TRUE(topo::detail::detectCpusSysfs(&g).ok());
  auto full = topo::detectLocal();
  ASSERT_TRUE(full.ok());
  EXPECT_EQ(g.ofType(NodeType::Numa).size(), full->ofType(NodeType::Numa).size());
  int a = 0, b = 0;
  for (int n : g.ofType(NodeType::Numa)) a += g.node(n).ncpus;
  for (int n : full->ofType(NodeType::Numa)) b += full->node(n).ncpus;
  EXPECT_EQ(a, b);
  for (const topo::detail::PciNic& nic : topo::detail::nicsSysfs()) EXPECT_FALSE(nic.busid.empty()) << nic.name;
}

TEST(TopologyXml, RoundTripIsIdentical) {
  std::vector<Graph> graphs;
  graphs.push_back(HandGraph().g);
  graphs.push_back(topo::syntheticNode(topo::NodeSpec{}));
  graphs.push_back(topo::syntheticClusterGraph(topo::ClusterSpec{}));
  auto local = topo::detectLocal();
  ASSERT_TRUE(local.ok());
  graphs.push_back(*local);
  for (const Graph& g0 : graphs) {
    const std::string x0 = topo::dumpTopology(g0);
    auto g1 = topo::loadTopology(x0);
    ASSERT_TRUE(g1.ok()) << atl::lastErrorMessage() << "\n" << x0;
    EXPECT_EQ(g1->nodes().size(), g0.nodes().size());
    EXPECT_EQ(g1->links().size(), g0.links().size());
    const std::string x1 = topo::dumpTopology(*g1);
    EXPECT_EQ(x1, x0);
    auto g2 = topo::loadTopology(x1);
    ASSERT_TRUE(g2.ok());
    EXPECT_TRUE(*g2 == *g1);
    // Paths survive the trip.
    for (int a : g0.ofType(NodeType::Gpu))
      for (int b : g0.ofType(NodeType::Gpu)) {
        const int a1 = g1->find(NodeType::Gpu, g0.node(a).id), b1 = g1->find(NodeType::Gpu, g0.node(b).id);
        EXPECT_EQ(g1->path(a1, b1).type, g0.path(a, b).type);
      }
  }
}

TEST(TopologyXml, FileDumpAndLoadThroughParams) {
  const std::string path = tempPath(".xml");
  setenv("NCCL_TOPO_DUMP_FILE", path.c_str(), 1);
  atl::params::reloadForTesting();
  auto g = topo::localTopology();
  unsetenv("NCCL_TOPO_DUMP_FILE");
  ASSERT_TRUE(g.ok());
  setenv("NCCL_TOPO_FILE", path.c_str(), 1);
  atl::params::reloadForTesting();
  topo::DetectInfo info;
  auto back = topo::localTopology(&info);
  unsetenv("NCCL_TOPO_FILE");
  atl::params::reloadForTesting();
  ASSERT_TRUE(back.ok()) << atl::lastErrorMessage();
  EXPECT_EQ(info.source, path);
  EXPECT_EQ(topo::dumpTopology(*back), topo::dumpTopology(*g));
  std::remove(path.c_str());
  EXPECT_FALSE(topo::readTopologyFile("/nonexistent/atoll.xml").ok());
}

TEST(TopologyXml, ReadsNcclStyle) {
  const char* nccl = R"(<?xml version="1.0"?>
<!-- as NCCL dumps it -->
<system version="1">
  <cpu numaid="0" affinity="ffff" arch="x86_64" vendor="GenuineIntel">
    <pci busid="0000:17:00.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">
      <pci busid="0000:18:00.0" class="0x030200">
        <gpu dev="0" sm="90" rank="0" gdr="1">
          <nvlink target="0000:19:00.0" count="6" tclass="0x030200"/>
        </gpu>
      </pci>
      <pci busid="0000:19:00.0" class="0x030200"><gpu dev="1"><nvlink target="0000:18:00.0" count="6" tclass="0x030200"/></gpu></pci>
      <pci busid="0000:1a:00.0" class="0x020700"><nic><net name="mlx5_0" dev="0" speed="400000" port="1"/></nic></pci>
    </pci>
  </cpu>
</system>)";
  auto g = topo::loadTopology(nccl);
  ASSERT_TRUE(g.ok()) << atl::lastErrorMessage();
  ASSERT_EQ(g->ofType(NodeType::Gpu).size(), 2u);
  EXPECT_GE(g->find(NodeType::Cpu, "cpu0"), 0);
  const int g0 = g->find(NodeType::Gpu, "0000:18:00.0"), g1 = g->find(NodeType::Gpu, "0000:19:00.0");
  const int nic = g->find(NodeType::Nic, "0000:1a:00.0");
  ASSERT_GE(nic, 0);
  EXPECT_EQ(g->node(nic).name, "mlx5_0");
  EXPECT_DOUBLE_EQ(g->node(nic).speedMbps, 400000);
  EXPECT_EQ(g->node(g1).index, 1);
  EXPECT_EQ(g->path(g0, g1).type, PathType::Nvl);
  EXPECT_EQ(g->path(g0, nic).type, PathType::Pix);
  // NVLinks listed from both ends are one link.
  int nvlinks = 0;
  for (const topo::Link& l : g->links()) nvlinks += l.type == LinkType::NvLink;
  EXPECT_EQ(nvlinks, 1);
}

TEST(TopologyXml, MalformedInputErrors) {
  const topo::test::XmlErrorCase cases[] = {
      {"", "expected a root element"},
      {"<system version=\"1\">", "missing </system>"},
      {"<system><cpu id=\"c\"></system>", "</system> closes <cpu>"},
      {"<system a=\"1\" a=\"2\"/>", "duplicate attribute"},
      {"<system a=1/>", "quoted value"},
      {"<system a=\"&bogus;\"/>", "unknown entity"},
      {"<system/><system/>", "after the root"},
      {"<system><!-- x </system>", "unterminated comment"},
      {"<sys\n  tem/>", "line 2"},
      {"<foo/>", "must be <system>"},
      {"<system version=\"2\"/>", "unsupported version"},
      {"<system><cpu ncpus=\"4\"/></system>", "missing id"},
      {"<system><cpu id=\"c\" numaid=\"zero\"/></system>", "not an integer"},
      {"<system><cpu id=\"c\"/><cpu id=\"c\"/></system>", "duplicate cpu:c"},
      {"<system><cpu id=\"c\"/><link a=\"cpu:c\" b=\"cpu:d\" type=\"smp\" bw=\"1\"/></system>", "unknown node cpu:d"},
      {"<system><cpu id=\"c\"/><cpu id=\"d\"/><link a=\"cpu:c\" b=\"cpu:d\" type=\"warp\" bw=\"1\"/></system>",
       "unknown link type"},
      {"<system><cpu id=\"c\"><pci busid=\"0000:01:00.0\" link_bw=\"-3\"/></cpu></system>", "non-negative"},
      {"<system><cpu id=\"c\"><cpu id=\"d\"/></cpu></system>", "cannot nest"},
      // Graphs whose dump would not load again, or whose numbers the cost model cannot use (tests/fuzz).
      {"<system><gpu busid=\"a\"/><link a=\"gpu:a\" b=\"gpu:a\" type=\"nvlink\" bw=\"1\"/></system>", "to itself"},
      {"<system><gpu busid=\"a\"><nvlink target=\"\" tclass=\"nvswitch\"/></gpu></system>", "missing target"},
      {"<system><gpu busid=\"a\"/><gpu busid=\"b\"/><link a=\"gpu:a\" b=\"gpu:b\" type=\"nvlink\" bw=\"1\" "
       "count=\"0\"/></system>",
       "count must be >= 1"},
      {"<system><cpu id=\"c\"><nic busid=\"n\" link_bw=\"inf\"/></cpu></system>", "non-negative"},
      {"<system><cpu id=\"c\"><nic busid=\"n\"><net speed=\"nan\"/></nic></cpu></system>", "non-negative"},
  };
  topo::test::expectXmlErrors(cases);
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += "<a>";
  EXPECT_FALSE(topo::parseXml(deep).ok());
  auto esc = topo::parseXml("<x v=\"a&amp;b&lt;&quot;\"/>");
  ASSERT_TRUE(esc.ok());
  EXPECT_EQ(*esc->attr("v"), "a&b<\"");
  auto back = topo::parseXml(topo::writeXml(*esc));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(*back == *esc);
}

namespace {

std::vector<topo::RankDesc> ranksOn(const std::vector<std::string>& hostOfRank) {
  std::vector<topo::RankDesc> out;
  for (const std::string& h : hostOfRank) {
    topo::RankDesc d;
    d.hostHash = std::hash<std::string>()(h);
    topo::setHostName(&d, h);
    out.push_back(d);
  }
  return out;
}

const char* kFabric = R"(# two islands of two leaves, one Dragonfly+ group each
level host   bw=10 lat=1
level leaf   bw=50 lat=2
level island bw=50 lat=3 oversub=2
level group  bw=25 lat=5 oversub=4
level global bw=12.5 lat=9 oversub=8
leaf l0 island=podA group=g0 hosts=a1,a2
leaf l1 island=podA group=g0 hosts=a3
leaf l2 island=podB group=g1 hosts=b[01-02]   # a range
)";

}  // namespace

TEST(TopologyIslands, PerHostByDefault) {
  const auto ranks = ranksOn({"h1", "h1", "h2", "h1", "h3"});
  topo::IslandRule rule;
  auto m = topo::buildIslandMap(ranks, nullptr, &rule);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(rule, topo::IslandRule::Host);
  EXPECT_EQ(m->islandOf, (std::vector<int>{0, 0, 1, 0, 2}));
  EXPECT_EQ(m->members, (std::vector<std::vector<int>>{{0, 1, 3}, {2}, {4}}));
  EXPECT_FALSE(topo::buildIslandMap({}, nullptr).ok());
}

TEST(TopologyIslands, PrecedenceSizeOverIdOverFabricOverHost) {
  auto fabric = topo::parseFabric(kFabric);
  ASSERT_TRUE(fabric.ok()) << atl::lastErrorMessage();
  auto ranks = ranksOn({"a1", "a2", "a3", "b01", "b02", "zz"});
  topo::IslandRule rule;
  // Fabric: podA, podB, and the unknown host on its own.
  auto m = topo::buildIslandMap(ranks, &*fabric, &rule);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(rule, topo::IslandRule::Fabric);
  EXPECT_EQ(m->members, (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4}, {5}}));
  // ATOLL_ISLAND_ID beats the fabric for the ranks that set it.
  for (auto& d : ranks) d.islandId = 7;
  ranks[4].islandId = 3;
  m = topo::buildIslandMap(ranks, &*fabric, &rule);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(rule, topo::IslandRule::Id);
  EXPECT_EQ(m->members, (std::vector<std::vector<int>>{{0, 1, 2, 3, 5}, {4}}));
  // ATOLL_ISLAND_SIZE beats everything; uneven tail.
  for (auto& d : ranks) d.islandSize = 4;
  m = topo::buildIslandMap(ranks, &*fabric, &rule);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(rule, topo::IslandRule::Size);
  EXPECT_EQ(m->islandOf, (std::vector<int>{0, 0, 0, 0, 1, 1}));
  EXPECT_EQ(m->members, (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4, 5}}));
  // Disagreeing sizes: rank 0's wins, so every rank computes the same map.
  ranks[3].islandSize = 2;
  m = topo::buildIslandMap(ranks, &*fabric, &rule);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->members.size(), 2u);
}

TEST(TopologyIslands, UnevenIslandSizes) {
  auto ranks = ranksOn(std::vector<std::string>(10, "h"));
  for (auto& d : ranks) d.islandSize = 3;
  auto m = topo::buildIslandMap(ranks, nullptr);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->members, (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}, {6, 7, 8}, {9}}));
  for (auto& d : ranks) d.islandSize = 64;
  m = topo::buildIslandMap(ranks, nullptr);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->members.size(), 1u);
  // Sparse ids: islands numbered by first rank.
  for (auto& d : ranks) d.islandSize = 0;
  const int ids[] = {9, 9, 2, 2, 2, 9, 5, 5, 2, 9};
  for (size_t r = 0; r < ranks.size(); ++r) ranks[r].islandId = ids[r];
  m = topo::buildIslandMap(ranks, nullptr);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->members, (std::vector<std::vector<int>>{{0, 1, 5, 9}, {2, 3, 4, 8}, {6, 7}}));
}

TEST(TopologyIslands, FromParams) {
  const std::string path = tempPath(".fabric");
  writeFile(path, kFabric);
  setenv("ATOLL_FABRIC_FILE", path.c_str(), 1);
  atl::params::reloadForTesting();
  auto ranks = ranksOn({"a1", "b01", "a2"});
  topo::IslandRule rule;
  auto m = topo::islandsFromParams(ranks, &rule);
  ASSERT_TRUE(m.ok()) << atl::lastErrorMessage();
  EXPECT_EQ(rule, topo::IslandRule::Fabric);
  EXPECT_EQ((*m)->members, (std::vector<std::vector<int>>{{0, 2}, {1}}));
  auto comm = topo::commPlacement(ranks);
  ASSERT_TRUE(comm.ok());
  EXPECT_EQ(comm->rule, topo::IslandRule::Fabric);
  EXPECT_EQ(comm->islands->members, (*m)->members);
  EXPECT_DOUBLE_EQ(comm->levels.interLatUs, 9);  // podA and podB are in different groups
  writeFile(path, "leaf x hosts=\n");
  atl::params::reloadForTesting();
  EXPECT_FALSE(topo::islandsFromParams(ranks).ok());
  EXPECT_FALSE(topo::commPlacement(ranks).ok());
  unsetenv("ATOLL_FABRIC_FILE");
  atl::params::reloadForTesting();
  std::remove(path.c_str());
  // The descriptor reads the island parameters.
  setenv("ATOLL_ISLAND_SIZE", "5", 1);
  setenv("ATOLL_ISLAND_ID", "3", 1);
  atl::params::reloadForTesting();
  const topo::RankDesc d = topo::localRankDesc();
  unsetenv("ATOLL_ISLAND_SIZE");
  unsetenv("ATOLL_ISLAND_ID");
  atl::params::reloadForTesting();
  EXPECT_EQ(d.islandSize, 5);
  EXPECT_EQ(d.islandId, 3);
  EXPECT_NE(d.hostHash, 0u);
  EXPECT_NE(d.hostName[0], '\0');
}

TEST(TopologyFabric, IndexedLookupMatchesTheScan) {
  // The index (built by parseFabric) must answer exactly as the file-order scan does, including
  // short names and hosts added after indexing (which fall back to the scan).
  std::string text = "level island bw=25\n";
  for (int l = 0; l < 64; ++l) {
    text += "leaf l" + std::to_string(l) + " island=p" + std::to_string(l / 8) + " hosts=";
    for (int h = 0; h < 16; ++h) text += (h ? "," : "") + std::string("n") + std::to_string(l * 16 + h) + ".dc" + std::to_string(h % 2);
    text += "\n";
  }
  auto f = topo::parseFabric(text);
  ASSERT_TRUE(f.ok()) << f.status().code();
  topo::Fabric scan = *f;
  scan.hosts.push_back(topo::FabricHost{"zz", "lz", "pz", "pz"});  // unindexed now: findHost scans
  for (const std::string q : {"n0.dc0", "n17.dc1", "n17", "n17.elsewhere", "n1023.dc1", "n1024", "dc0", ""}) {
    const topo::FabricHost* a = f->findHost(q);
    const topo::FabricHost* b = scan.findHost(q);
    ASSERT_EQ(a == nullptr, b == nullptr) << q;
    if (a) {
      EXPECT_EQ(a->host, b->host) << q;
    }
  }
  EXPECT_EQ(f->findHost("n17")->host, "n17.dc1");
  EXPECT_EQ(f->findHost("n1024"), nullptr);
}

TEST(TopologyFabric, ParsesAndFormats) {
  auto f = topo::parseFabric(kFabric);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->hosts.size(), 5u);
  EXPECT_EQ(f->hosts[3].host, "b01");
  EXPECT_EQ(f->hosts[4].island, "podB");
  EXPECT_EQ(f->findHost("a3.cluster.example")->leaf, "l1");
  EXPECT_EQ(f->findHost("nope"), nullptr);
  EXPECT_DOUBLE_EQ(f->level(topo::Level::Island).effectiveGBs(), 25);
  EXPECT_DOUBLE_EQ(f->level(topo::Level::Global).latUs, 9);
  auto again = topo::parseFabric(topo::formatFabric(*f));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(topo::formatFabric(*again), topo::formatFabric(*f));
  // Island defaults to the leaf, group to the island.
  auto minimal = topo::parseFabric("leaf solo hosts=x\n");
  ASSERT_TRUE(minimal.ok());
  EXPECT_EQ(minimal->hosts[0].island, "solo");
  EXPECT_EQ(minimal->hosts[0].group, "solo");
}

TEST(TopologyFabric, BadFilesSayWhy) {
  struct Case {
    const char* text;
    const char* expect;
  } cases[] = {
      {"switch s hosts=a\n", "line 1: unknown keyword"},
      {"\n\nlevel leaf lat=2\n", "line 3: level leaf needs bw="},
      {"level leaf bw=fast\n", "not a number"},
      {"level leaf bw=0\n", "bw must be > 0"},
      {"level leaf bw=1 oversub=0.5\n", "oversub must be >= 1"},
      {"level pod bw=1\n", "unknown level"},
      {"level leaf bw=1\nlevel leaf bw=2\n", "given twice"},
      {"leaf l0\n", "needs hosts="},
      {"leaf l0 hosts=a\nleaf l1 hosts=a\n", "host a is on two leaves"},
      {"leaf l0 hosts=n[5-2]\n", "bad host range"},
      {"leaf l0 hosts=a,,b\n", "empty host name"},
      {"leaf l0 speed=3 hosts=a\n", "unknown leaf key"},
      {"leaf l0 island=p group=g1 hosts=a\nleaf l1 island=p group=g2 hosts=b\n", "island p is in groups"},
      {"leaf\n", "needs a name"},
      {"leaf l0 hosts\n", "key=value"},
  };
  for (const Case& c : cases) {
    atl::clearLastError();
    auto f = topo::parseFabric(c.text);
    EXPECT_FALSE(f.ok()) << c.text;
    EXPECT_NE(atl::lastErrorMessage().find(c.expect), std::string::npos) << c.text << " -> " << atl::lastErrorMessage();
  }
  EXPECT_FALSE(topo::readFabricFile("/nonexistent/fabric").ok());
}

TEST(TopologyFabric, CostModelLevels) {
  auto f = topo::parseFabric(kFabric);
  ASSERT_TRUE(f.ok());
  // Islands spanning leaves of one pod, joined across Dragonfly+ groups.
  auto ranks = ranksOn({"a1", "a3", "b01", "b02"});
  auto m = topo::buildIslandMap(ranks, &*f);
  ASSERT_TRUE(m.ok());
  topo::FabricLevels lv = topo::fabricLevels(ranks, *m, &*f);
  EXPECT_DOUBLE_EQ(lv.intraBwGBs, 25);  // island level 50 / 2
  EXPECT_DOUBLE_EQ(lv.intraLatUs, 3);
  EXPECT_DOUBLE_EQ(lv.interBwGBs, 12.5 / 8);  // global level
  EXPECT_DOUBLE_EQ(lv.interLatUs, 9);
  EXPECT_EQ(lv.islandHosts, 2);  // both islands span two hosts
  // A host with two ranks counts once; the smallest island decides.
  ranks = ranksOn({"a1", "a1", "a3", "b01"});
  m = topo::buildIslandMap(ranks, &*f);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(topo::fabricLevels(ranks, *m, &*f).islandHosts, 1);
  // Emulated islands on one host without a fabric: the documented defaults.
  auto local = ranksOn({"h", "h", "h", "h"});
  for (auto& d : local) d.islandSize = 2;
  m = topo::buildIslandMap(local, nullptr);
  ASSERT_TRUE(m.ok());
  lv = topo::fabricLevels(local, *m, nullptr);
  EXPECT_DOUBLE_EQ(lv.intraBwGBs, 10);
  EXPECT_DOUBLE_EQ(lv.intraLatUs, 1);
  EXPECT_DOUBLE_EQ(lv.interBwGBs, 1.25);
  EXPECT_DOUBLE_EQ(lv.interLatUs, 10);
  // One island: inter equals intra.
  for (auto& d : local) d.islandSize = 0;
  m = topo::buildIslandMap(local, nullptr);
  ASSERT_TRUE(m.ok());
  lv = topo::fabricLevels(local, *m, nullptr);
  EXPECT_DOUBLE_EQ(lv.interBwGBs, lv.intraBwGBs);
}

TEST(TopologySynthetic, SixtyFourIslands) {
  topo::ClusterSpec spec;
  spec.nodes = 256;
  spec.node.gpus = 8;
  spec.nodesPerLeaf = 4;  // 4 hosts per leaf, one leaf per island -> 64 islands
  spec.leavesPerIsland = 1;
  auto c = topo::syntheticCluster(spec);
  ASSERT_TRUE(c.ok()) << atl::lastErrorMessage();
  ASSERT_EQ(c->ranks.size(), 2048u);
  ASSERT_EQ(c->islands.members.size(), 64u);
  for (size_t i = 0; i < 64; ++i) {
    ASSERT_EQ(c->islands.members[i].size(), 32u);
    EXPECT_EQ(c->islands.members[i].front(), static_cast<int>(i) * 32);
    for (int r : c->islands.members[i]) EXPECT_EQ(c->islands.islandOf[static_cast<size_t>(r)], static_cast<int>(i));
  }
  EXPECT_LT(c->levels.interBwGBs, c->levels.intraBwGBs);
  // The generated fabric is a valid fabric file.
  auto f = topo::parseFabric(topo::formatFabric(c->fabric));
  ASSERT_TRUE(f.ok()) << atl::lastErrorMessage();
  EXPECT_EQ(f->hosts.size(), 256u);
  // Uneven: 10 nodes, 3 per island.
  spec.nodes = 10;
  spec.nodesPerLeaf = 3;
  spec.node.gpus = 2;
  c = topo::syntheticCluster(spec);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->islands.members.size(), 4u);
  EXPECT_EQ(c->islands.members.back(), (std::vector<int>{18, 19}));
  spec.nodes = 0;
  EXPECT_FALSE(topo::syntheticCluster(spec).ok());
}

TEST(TopologySynthetic, DragonflyPlus) {
  topo::ClusterSpec spec;
  spec.nodes = 32;
  spec.node.gpus = 4;
  spec.node.nics = 4;
  spec.nodesPerLeaf = 2;
  spec.leavesPerIsland = 2;  // 4 hosts per island -> 8 islands
  spec.islandsPerGroup = 4;  // 2 groups
  spec.groupOversub = 2;
  spec.globalOversub = 4;
  auto c = topo::syntheticCluster(spec);
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->islands.members.size(), 8u);
  EXPECT_EQ(c->groupOfIsland, (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_DOUBLE_EQ(c->levels.interLatUs, spec.globalLatUs);
  EXPECT_DOUBLE_EQ(c->levels.interBwGBs, 4 * 400.0 / 8 / 4);
  EXPECT_DOUBLE_EQ(c->levels.intraLatUs, spec.islandLatUs);
  // The cost model's Dragonfly+ figures: two groups, joined inside by the group level.
  EXPECT_EQ(c->levels.groups, 2);
  EXPECT_DOUBLE_EQ(c->levels.groupBwGBs, 4 * 400.0 / 8 / 2);
  EXPECT_DOUBLE_EQ(c->levels.groupLatUs, spec.groupLatUs);
  // One group spans no global links: the group level is the inter-island level itself.
  topo::ClusterSpec one = spec;
  one.nodes = 16;
  auto oneGroup = topo::syntheticCluster(one);
  ASSERT_TRUE(oneGroup.ok());
  EXPECT_EQ(oneGroup->levels.groups, 1);
  EXPECT_DOUBLE_EQ(oneGroup->levels.interBwGBs, 4 * 400.0 / 8 / 2);
  // A fat tree has no groups.
  topo::ClusterSpec fat = spec;
  fat.islandsPerGroup = 0;
  auto fatTree = topo::syntheticCluster(fat);
  ASSERT_TRUE(fatTree.ok());
  EXPECT_EQ(fatTree->levels.groups, 1);

  // The same shape as a graph (small): within an island NET over the spine at island latency,
  // across groups over two spines at the global latency.
  spec.nodes = 16;
  spec.node.gpus = 2;
  spec.node.nics = 1;
  spec.islandsPerGroup = 2;  // 4 islands in 2 groups
  const Graph g = topo::syntheticClusterGraph(spec);
  EXPECT_EQ(g.ofType(NodeType::Spine).size(), 4u);
  EXPECT_EQ(g.ofType(NodeType::Leaf).size(), 8u);
  const int a = g.find(NodeType::Gpu, "node0000/0000:11:00.0");
  const int sameLeaf = g.find(NodeType::Gpu, "node0001/0000:11:00.0");
  const int sameIsland = g.find(NodeType::Gpu, "node0002/0000:11:00.0");
  const int sameGroup = g.find(NodeType::Gpu, "node0004/0000:11:00.0");
  const int otherGroup = g.find(NodeType::Gpu, "node0008/0000:11:00.0");
  ASSERT_TRUE(a >= 0 && sameLeaf >= 0 && sameIsland >= 0 && sameGroup >= 0 && otherGroup >= 0);
  const topo::Path pl = g.path(a, sameLeaf), pi = g.path(a, sameIsland), pg = g.path(a, sameGroup),
                   po = g.path(a, otherGroup);
  EXPECT_EQ(pl.type, PathType::Net);
  EXPECT_EQ(po.type, PathType::Net);
  EXPECT_LT(pl.latUs, pi.latUs);
  EXPECT_LT(pi.latUs, pg.latUs);
  EXPECT_LT(pg.latUs, po.latUs);
  EXPECT_LE(po.bwGBs, pg.bwGBs);
}

TEST(TopologySummary, DescribesIslands) {
  auto ranks = ranksOn({"h", "h", "h"});
  for (auto& d : ranks) d.islandSize = 2;
  topo::IslandRule rule;
  auto m = topo::buildIslandMap(ranks, nullptr, &rule);
  ASSERT_TRUE(m.ok());
  const std::string s = topo::describeIslands(*m, rule, nullptr);
  EXPECT_NE(s.find("Islands: 2 for 3 ranks (by ATOLL_ISLAND_SIZE)"), std::string::npos) << s;
  EXPECT_NE(s.find("island 1: 2"), std::string::npos) << s;
  const std::string p = topo::pathMatrix(HandGraph().g);
  EXPECT_NE(p.find("NVL"), std::string::npos);
  EXPECT_NE(p.find("SYS"), std::string::npos);
}

// Found by tests/fuzz/fuzz_topology: names that are no host's name, and numbers that are not
// numbers, used to be accepted (and did not survive formatFabric -> parseFabric).
TEST(TopologyFabric, RejectsNamesThatCannotBeHostsAndNonFiniteNumbers) {
  for (const std::string& bad : {std::string("leaf l0 hosts=node[1-2][3-4]\n"), std::string("leaf l0 hosts=a\x01b\n"),
                                std::string("leaf l0 hosts=a") + '\0' + "b\n", std::string("leaf l\xa0 hosts=a\n"),
                                std::string("leaf l0 island=p,q hosts=a\n"), std::string("level leaf bw=inf\n"),
                                std::string("level leaf bw=1 lat=nan\n"), "leaf l0 hosts=" + std::string(64, 'x') + "\n"})
    EXPECT_FALSE(topo::parseFabric(bad).ok()) << bad;
  auto ok = topo::parseFabric("leaf l0 island=pod_0 group=g-1 hosts=node-01.example.com,n[08-10]\n");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->hosts.size(), 4u);
  EXPECT_EQ(topo::formatFabric(*topo::parseFabric(topo::formatFabric(*ok))), topo::formatFabric(*ok));
}

TEST(TopologyFabric, OneHostUsesOnlyTheHostLevel) {
  auto f = topo::parseFabric("level leaf bw=50 lat=2\nleaf l0 hosts=h\n");
  ASSERT_TRUE(f.ok());
  auto ranks = ranksOn({"h", "h"});
  auto m = topo::buildIslandMap(ranks, &*f);
  ASSERT_TRUE(m.ok());
  const topo::FabricLevels lv = topo::fabricLevels(ranks, *m, &*f);
  EXPECT_DOUBLE_EQ(lv.intraBwGBs, 10);
  EXPECT_DOUBLE_EQ(lv.intraLatUs, 1);
}

// Truncations and byte flips of a valid dump either load or fail cleanly (run under ASan/UBSan).
TEST(TopologyXml, MutatedInputNeverCrashes) {
  const std::string good = topo::dumpTopology(topo::syntheticNode(topo::NodeSpec{}));
  uint64_t state = 0x243f6a8885a308d3ull;
  auto next = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return state >> 33;
  };
  const char alphabet[] = "<>/=\"'&;!?- abc\n";
  int failed = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string s = good;
    if (i % 3 == 0) {
      s.resize(next() % s.size());
    } else {
      for (int k = 0; k < 1 + i % 4; ++k) s[next() % s.size()] = alphabet[next() % (sizeof alphabet - 1)];
    }
    auto g = topo::loadTopology(s);
    failed += !g.ok();
  }
  EXPECT_GT(failed, 0);
}
