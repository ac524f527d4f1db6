#include "topology/graph.h"

#include <algorithm>
#include <limits>
#include <queue>

namespace atl::topo {

const char* nodeTypeName(NodeType t) {
  switch (t) {
    case NodeType::Gpu:
      return "gpu";
    case NodeType::Cpu:
      return "cpu";
    case NodeType::Numa:
      return "numa";
    case NodeType::Pci:
      return "pci";
    case NodeType::Nic:
      return "nic";
    case NodeType::NvSwitch:
      return "nvswitch";
    case NodeType::Leaf:
      return "leaf";
    case NodeType::Spine:
      return "spine";
    case NodeType::Net:
      return "net";
  }
  return "?";
}

const char* linkTypeName(LinkType t) {
  switch (t) {
    case LinkType::NvLink:
      return "nvlink";
    case LinkType::Pci:
      return "pci";
    case LinkType::Smp:
      return "smp";
    case LinkType::Net:
      return "net";
    case LinkType::Local:
      return "local";
  }
  return "?";
}

const char* pathTypeName(PathType t) {
  switch (t) {
    case PathType::Loc:
      return "LOC";
    case PathType::Nvl:
      return "NVL";
    case PathType::Pix:
      return "PIX";
    case PathType::Pxb:
      return "PXB";
    case PathType::Phb:
      return "PHB";
    case PathType::Sys:
      return "SYS";
    case PathType::Net:
      return "NET";
    case PathType::Dis:
      return "DIS";
  }
  return "?";
}

int Graph::addNode(Node n) {
  nodes_.push_back(std::move(n));
  adj_.emplace_back();
  return static_cast<int>(nodes_.size()) - 1;
}

void Graph::addLink(int a, int b, LinkType type, double bwGBs, double latUs, int count) {
  links_.push_back(Link{a, b, type, bwGBs, latUs, count});
  const int l = static_cast<int>(links_.size()) - 1;
  adj_[static_cast<size_t>(a)].push_back(l);
  adj_[static_cast<size_t>(b)].push_back(l);
}

int Graph::find(NodeType type, const std::string& id) const {
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].type == type && nodes_[i].id == id) return static_cast<int>(i);
  return -1;
}

std::vector<int> Graph::ofType(NodeType type) const {
  std::vector<int> out;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i].type == type) out.push_back(static_cast<int>(i));
  return out;
}

int cpuOfNuma(const Graph& g, int numa) {
  const int c = g.find(NodeType::Cpu, "cpu" + std::to_string(numa));
  if (c >= 0) return c;
  const std::vector<int> cpus = g.ofType(NodeType::Cpu);
  return cpus.empty() ? -1 : cpus.front();
}

int Graph::other(int l, int i) const {
  const Link& k = links_[static_cast<size_t>(l)];
  return k.a == i ? k.b : k.a;
}

namespace {

// Classifies by what the path crosses, in NCCL's order of severity: any network link is NET, a
// socket-to-socket link SYS, passing through a CPU (host bridge) PHB, then the number of PCI
// switches; a path of NVLinks only (NVSwitches allowed) is NVL.
PathType classify(const Graph& g, const std::vector<int>& nodes, const std::vector<int>& links) {
  bool net = false, smp = false, allNvl = true;
  int cpus = 0, switches = 0;
  for (int l : links) {
    const LinkType t = g.links()[static_cast<size_t>(l)].type;
    net |= t == LinkType::Net;
    smp |= t == LinkType::Smp;
    allNvl &= t == LinkType::NvLink;
  }
  // A CPU counts as an endpoint too: device-to-CPU traffic crosses the host bridge.
  for (size_t i = 0; i < nodes.size(); ++i) {
    const NodeType t = g.node(nodes[i]).type;
    cpus += t == NodeType::Cpu || t == NodeType::Numa;
    if (i > 0 && i + 1 < nodes.size()) switches += t == NodeType::Pci;
  }
  if (net) return PathType::Net;
  if (smp) return PathType::Sys;
  if (allNvl) return PathType::Nvl;
  if (cpus > 0) return PathType::Phb;
  return switches <= 1 ? PathType::Pix : PathType::Pxb;
}

}  // namespace

Path Graph::path(int a, int b) const {
  Path p;
  if (a < 0 || b < 0 || a >= static_cast<int>(nodes_.size()) || b >= static_cast<int>(nodes_.size())) return p;
  if (a == b) {
    p.type = PathType::Loc;
    p.bwGBs = std::numeric_limits<double>::infinity();
    p.nodes = {a};
    return p;
  }
  // Widest-path Dijkstra: maximise the bottleneck, break ties on hop count then latency. Paths never
  // transit a GPU (GPU-to-GPU forwarding is a choice of the algorithm, not of the topology); a NIC is
  // transited only between its PCI side and the network, its only two kinds of link.
  const size_t n = nodes_.size();
  std::vector<double> bw(n, -1.0), lat(n, 0.0);
  std::vector<int> hops(n, std::numeric_limits<int>::max()), prevLink(n, -1);
  struct Item {
    double bw;
    int hops;
    double lat;
    int node;
    bool operator<(const Item& o) const {
      if (bw != o.bw) return bw < o.bw;
      if (hops != o.hops) return hops > o.hops;
      return lat > o.lat;
    }
  };
  std::priority_queue<Item> q;
  bw[static_cast<size_t>(a)] = std::numeric_limits<double>::infinity();
  hops[static_cast<size_t>(a)] = 0;
  q.push({bw[static_cast<size_t>(a)], 0, 0.0, a});
  std::vector<bool> done(n, false);
  while (!q.empty()) {
    const Item it = q.top();
    q.pop();
    const size_t u = static_cast<size_t>(it.node);
    if (done[u]) continue;
    done[u] = true;
    if (it.node == b) break;
    const NodeType ut = nodes_[u].type;
    if (it.node != a && ut == NodeType::Gpu) continue;
    for (int l : adj_[u]) {
      const int v = other(l, it.node);
      const size_t vi = static_cast<size_t>(v);
      if (done[vi]) continue;
      const Link& k = links_[static_cast<size_t>(l)];
      const Item cand{std::min(it.bw, k.bwGBs), it.hops + 1, it.lat + k.latUs, v};
      const Item cur{bw[vi], hops[vi], lat[vi], v};
      if (prevLink[vi] < 0 || cur < cand) {
        bw[vi] = cand.bw;
        hops[vi] = cand.hops;
        lat[vi] = cand.lat;
        prevLink[vi] = l;
        q.push(cand);
      }
    }
  }
  if (prevLink[static_cast<size_t>(b)] < 0) return p;
  std::vector<int> links;
  for (int v = b; v != a;) {
    const int l = prevLink[static_cast<size_t>(v)];
    links.push_back(l);
    p.nodes.push_back(v);
    v = other(l, v);
  }
  p.nodes.push_back(a);
  std::reverse(p.nodes.begin(), p.nodes.end());
  std::reverse(links.begin(), links.end());
  p.bwGBs = bw[static_cast<size_t>(b)];
  p.latUs = lat[static_cast<size_t>(b)];
  p.type = classify(*this, p.nodes, links);
  return p;
}

}  // namespace atl::topo
