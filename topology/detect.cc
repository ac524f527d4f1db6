#include "topology/detect.h"

#include "base/debug.h"
#include "base/params.h"
#include "topology/nvml.h"
#include "topology/sysfs.h"
#include "topology/topo_xml.h"

namespace atl::topo {

namespace {

constexpr double kPciLatUs = 0.5;
constexpr double kNvLinkLatUs = 0.7;

// The kernel shows a PCIe switch as an upstream port with downstream ports below it; NCCL's PIX
// means "one switch", so each upstream/downstream pair becomes one node, and the root port is part
// of the CPU's host bridge.
int attachPci(Graph* g, const std::string& busid, int numa, Node dev) {
  int parent = cpuOfNuma(*g, numa);
  if (parent < 0) return -1;
  const std::vector<std::string> chain = sysfs::pciBridgeChain(busid);
  for (size_t i = 1; i < chain.size(); i += 2) {
    int sw = g->find(NodeType::Pci, chain[i]);
    if (sw < 0) {
      Node n;
      n.type = NodeType::Pci;
      n.id = chain[i];
      n.numa = g->node(parent).numa;
      sw = g->addNode(std::move(n));
      const double bw = sysfs::pciLinkGBs(chain[i]);
      g->addLink(parent, sw, LinkType::Pci, bw > 0 ? bw : kPciGen4x16GBs, kPciLatUs);
    }
    parent = sw;
  }
  dev.id = busid;
  dev.numa = g->node(parent).numa;
  const int self = g->addNode(std::move(dev));
  const double bw = sysfs::pciLinkGBs(busid);
  g->addLink(parent, self, LinkType::Pci, bw > 0 ? bw : kPciGen4x16GBs, kPciLatUs);
  return self;
}

void addNics(Graph* g, const std::vector<detail::PciNic>& nics) {
  for (const detail::PciNic& nic : nics) {
    const int existing = g->find(NodeType::Nic, nic.busid);
    if (existing >= 0) continue;  // a second port of the same function is one NIC to us
    Node n;
    n.type = NodeType::Nic;
    n.name = nic.name;
    n.speedMbps = sysfs::netSpeedMbps(nic.name);
    // The kernel's numa_node is exact; hwloc's locality is the fallback where firmware leaves it -1.
    const int numa = sysfs::pciNumaNode(nic.busid);
    attachPci(g, nic.busid, numa >= 0 ? numa : nic.numa, std::move(n));
  }
  // RDMA devices: the same PCI function as a RoCE/IPoIB netdev, or a NIC of their own.
  for (const sysfs::IbDevice& ib : sysfs::infinibandDevices()) {
    if (ib.busid.empty()) continue;
    const int existing = g->find(NodeType::Nic, ib.busid);
    if (existing >= 0) continue;
    Node n;
    n.type = NodeType::Nic;
    n.name = ib.name;
    n.speedMbps = ib.speedMbps;
    attachPci(g, ib.busid, sysfs::pciNumaNode(ib.busid), std::move(n));
  }
}

void addGpus(Graph* g, DetectInfo* info) {
  std::string why;
  const std::vector<NvmlGpu> gpus = nvmlGpus(&why);
  if (info) info->gpus = why;
  for (const NvmlGpu& gpu : gpus) {
    Node n;
    n.type = NodeType::Gpu;
    n.index = gpu.index;
    n.name = gpu.name;
    attachPci(g, gpu.busid, sysfs::pciNumaNode(gpu.busid), std::move(n));
  }
  // NVLinks once both ends exist; all NVSwitches of a node act as one fabric, so they merge.
  for (const NvmlGpu& gpu : gpus) {
    const int a = g->find(NodeType::Gpu, gpu.busid);
    for (const auto& [peer, count] : gpu.nvlinkPeers) {
      int b = g->find(NodeType::Gpu, peer);
      if (b >= 0 && b < a) continue;  // listed from the other end already
      if (b < 0) {
        b = g->find(NodeType::NvSwitch, "nvswitch");
        if (b < 0) b = g->addNode(Node{NodeType::NvSwitch, "nvswitch", "", -1, -1, 0, 0});
      }
      if (a >= 0 && b != a) g->addLink(a, b, LinkType::NvLink, kNvLinkGBs * count, kNvLinkLatUs, count);
    }
  }
}

}  // namespace

Result<Graph> detectLocal(DetectInfo* info) {
  Graph g;
  std::vector<detail::PciNic> nics;
  Status st = Status::Ok();
  if (haveHwloc()) {
    st = detail::detectCpusHwloc(&g, &nics);
    if (info) info->backend = "hwloc";
    if (!st.ok()) {
      ATOLL_INFO(log::kGraph, "hwloc detection failed; falling back to /sys");
      g = Graph();
      nics.clear();
    }
  }
  if (!haveHwloc() || !st.ok()) {
    ATOLL_CHECK(detail::detectCpusSysfs(&g));
    nics = detail::nicsSysfs();
    if (info) info->backend = "sysfs";
  }
  addNics(&g, nics);
  addGpus(&g, info);
  if (info) info->source = "detected";
  return g;
}

Result<Graph> localTopology(DetectInfo* info) {
  const std::string& file = params::getString(params::Id::TopoFile);
  Graph g;
  if (!file.empty()) {
    ATOLL_ASSIGN_OR_RETURN(g, readTopologyFile(file));
    if (info) *info = DetectInfo{"file", "from file", file};
  } else {
    ATOLL_ASSIGN_OR_RETURN(g, detectLocal(info));
  }
  const std::string& dump = params::getString(params::Id::TopoDumpFile);
  if (!dump.empty() && !writeTopologyFile(g, dump).ok())
    ATOLL_WARN("NCCL_TOPO_DUMP_FILE=%s: could not write the topology", dump.c_str());
  return g;
}

}  // namespace atl::topo
