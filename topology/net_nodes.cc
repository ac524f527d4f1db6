#include "topology/net_nodes.h"

#include <algorithm>
#include <cmath>

#include "topology/sysfs.h"

namespace atl::topo {

namespace {

// NCCL's socket net assumes 10 Gb/s when a device gives no figure; a 0 would make the device the
// bottleneck of every path and never chosen.
constexpr double kUnknownSpeedMbps = 10000.0;
constexpr double kPciLatUs = 0.5;

int parentOf(Graph* g, const NetDeviceDesc& d) {
  const std::string busid = sysfs::busIdInPath(d.pciPath);
  if (busid.empty()) return cpuOfNuma(*g, -1);
  const std::string id = sysfs::canonicalBusId(busid);
  for (NodeType t : {NodeType::Nic, NodeType::Pci}) {
    const int n = g->find(t, id);
    if (n >= 0) return n;
  }
  return cpuOfNuma(*g, sysfs::pciNumaNode(id));
}

}  // namespace

std::vector<int> addNetDevices(Graph* g, std::span<const NetDeviceDesc> devices) {
  std::vector<int> out;
  for (size_t i = 0; i < devices.size(); ++i) {
    const NetDeviceDesc& d = devices[i];
    const int parent = parentOf(g, d);
    Node n;
    n.type = NodeType::Net;
    n.id = "net" + std::to_string(i);
    n.name = d.name;
    n.index = static_cast<int>(i);
    n.speedMbps = d.speedMbps;
    n.latUs = d.latUs;
    n.ptrSupport = d.ptrSupport;
    n.numa = parent >= 0 ? g->node(parent).numa : -1;
    const int self = g->addNode(std::move(n));
    out.push_back(self);
    if (parent < 0) continue;
    const double gbs = (d.speedMbps > 0 ? d.speedMbps : kUnknownSpeedMbps) / 8000.0;
    // Below its NIC the hop is the NIC's own port (NCCL's LINK_NET, which its paths treat as
    // local); hung from a CPU it stands for a PCI device the detection did not see.
    const bool underCpu = g->node(parent).type == NodeType::Cpu;
    g->addLink(parent, self, underCpu ? LinkType::Pci : LinkType::Local, gbs, (underCpu ? kPciLatUs : 0) + d.latUs);
  }
  return out;
}

int rankAnchor(const Graph& g, int cudaDev, int numa) {
  if (cudaDev >= 0)
    for (int n : g.ofType(NodeType::Gpu))
      if (g.node(n).index == cudaDev) return n;
  return cpuOfNuma(g, numa);
}

NetChoice nearestNetDevice(const Graph& g, int anchor, std::span<const int> netNodes, int spread) {
  std::vector<Path> paths;
  for (int n : netNodes) paths.push_back(g.path(anchor, n));
  // Bandwidths within 1% count as equal: two ports of one model may report 100000 and 99999.
  // Latency does not split ties: one PCI hop more (0.5 us) must not send every rank to one device.
  auto nearer = [](const Path& a, const Path& b) {
    if (a.type != b.type) return a.type < b.type;
    return std::abs(a.bwGBs - b.bwGBs) > 0.01 * std::max(a.bwGBs, b.bwGBs) && a.bwGBs > b.bwGBs;
  };
  size_t best = 0;
  for (size_t i = 1; i < paths.size(); ++i)
    if (nearer(paths[i], paths[best])) best = i;
  std::vector<size_t> equal;
  for (size_t i = 0; i < paths.size(); ++i)
    if (!nearer(paths[best], paths[i])) equal.push_back(i);
  NetChoice c;
  c.equals = static_cast<int>(equal.size());
  const size_t pick = equal[static_cast<size_t>(std::max(spread, 0)) % equal.size()];
  c.device = static_cast<int>(pick);
  c.path = paths[pick];
  return c;
}

}  // namespace atl::topo
