// The topology graph: typed nodes (GPU, CPU, NUMA, PCI, NIC, net device, NVSwitch, leaf, spine) joined by typed
// links with bandwidth and latency, and NCCL-style path classes between two nodes.
#pragma once

#include <string>
#include <vector>

namespace atl::topo {

/// Net: a device of the network the communicator uses (a net plugin's device, NCCL's NET node),
/// hung below the NIC or PCI function it drives (topology/net_nodes.h).
enum class NodeType { Gpu, Cpu, Numa, Pci, Nic, NvSwitch, Leaf, Spine, Net };
enum class LinkType { NvLink, Pci, Smp, Net, Local };

/// NCCL's path classes, best first: NVL (NVLink only), PIX (one PCI switch), PXB (several PCI
/// switches, no host bridge), PHB (through a CPU host bridge), SYS (across sockets), NET (network).
/// LOC is a node with itself; DIS means no path.
enum class PathType { Loc, Nvl, Pix, Pxb, Phb, Sys, Net, Dis };

const char* nodeTypeName(NodeType t);
const char* linkTypeName(LinkType t);
const char* pathTypeName(PathType t);

struct Node {
  NodeType type = NodeType::Cpu;
  std::string id;        // PCI bus id for PCI devices, a unique name otherwise
  std::string name;      // netdev name, GPU model, CPU model
  int numa = -1;         // owning NUMA node (Cpu, Numa, devices)
  int index = -1;        // GPU ordinal, CPU package index, NUMA os index
  int ncpus = 0;         // Cpu/Numa: logical CPUs
  double speedMbps = 0;  // Nic, Net: link speed in Mb/s as /sys and NCCL report it (0 = unknown)
  double latUs = 0;      // Net: the device's reported latency (0 = unknown)
  int ptrSupport = 0;    // Net: NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF
  bool operator==(const Node&) const = default;
};

struct Link {
  int a = -1, b = -1;  // node indices; links are undirected
  LinkType type = LinkType::Pci;
  double bwGBs = 0;  // GB/s
  double latUs = 0;  // microseconds
  int count = 1;     // parallel lanes (NVLinks) merged into bwGBs
  bool operator==(const Link&) const = default;
};

struct Path {
  PathType type = PathType::Dis;
  double bwGBs = 0;        // bottleneck bandwidth
  double latUs = 0;        // sum of link latencies
  std::vector<int> nodes;  // a -> ... -> b
};

/// Typical link figures used when a source gives no number.
inline constexpr double kPciGen4x16GBs = 24.0;
inline constexpr double kNvLinkGBs = 25.0;  // per link (NVLink 3/4 lane)
inline constexpr double kSmpGBs = 40.0;

class Graph {
 public:
  int addNode(Node n);
  void addLink(int a, int b, LinkType type, double bwGBs, double latUs, int count = 1);

  const std::vector<Node>& nodes() const { return nodes_; }
  const std::vector<Link>& links() const { return links_; }
  const Node& node(int i) const { return nodes_[static_cast<size_t>(i)]; }
  /// Index of the node with this type and id, -1 if absent.
  int find(NodeType type, const std::string& id) const;
  std::vector<int> ofType(NodeType type) const;
  /// Links touching node i (indices into links()).
  const std::vector<int>& linksOf(int i) const { return adj_[static_cast<size_t>(i)]; }
  /// Node i's neighbour through link l.
  int other(int l, int i) const;

  /// The widest path (max bottleneck bandwidth, then fewest hops) from a to b, classified.
  Path path(int a, int b) const;

  bool operator==(const Graph& o) const { return nodes_ == o.nodes_ && links_ == o.links_; }

 private:
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<std::vector<int>> adj_;
};

/// The CPU node (host bridge) of NUMA domain `numa`, else the first CPU; -1 when there is none.
int cpuOfNuma(const Graph& g, int numa);

}  // namespace atl::topo
