#include "topology/summary.h"

#include <cstdarg>
#include <cstdio>

namespace atl::topo {

namespace {

void add(std::string* out, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
void add(std::string* out, const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  *out += buf;
}

std::string label(const Node& n) {
  std::string s = std::string(nodeTypeName(n.type)) + " " + n.id;
  if (n.type == NodeType::Gpu && n.index >= 0) s += " (gpu" + std::to_string(n.index) + ")";
  if (n.type == NodeType::Nic && !n.name.empty()) s += " (" + n.name + ")";
  return s;
}

void tree(const Graph& g, int u, int depth, std::vector<bool>* seen, std::vector<bool>* linkShown, std::string* out) {
  for (int l : g.linksOf(u)) {
    const Link& k = g.links()[static_cast<size_t>(l)];
    const int v = g.other(l, u);
    if ((*seen)[static_cast<size_t>(v)] || (k.type != LinkType::Pci && k.type != LinkType::Local)) continue;
    (*seen)[static_cast<size_t>(v)] = true;
    (*linkShown)[static_cast<size_t>(l)] = true;
    const Node& n = g.node(v);
    add(out, "%*s%s  [%s %.1f GB/s]", depth * 2, "", label(n).c_str(), linkTypeName(k.type), k.bwGBs);
    if (!n.name.empty() && n.type != NodeType::Nic) add(out, " %s", n.name.c_str());
    if (n.type == NodeType::Nic) {
      if (n.speedMbps > 0)
        add(out, " %.0f Gb/s", n.speedMbps / 1000);
      else
        add(out, " speed unknown");
    }
    *out += "\n";
    tree(g, v, depth + 1, seen, linkShown, out);
  }
}

}  // namespace

std::string summarize(const Graph& g, const DetectInfo* info) {
  std::string out;
  const size_t cpus = g.ofType(NodeType::Cpu).size(), numa = g.ofType(NodeType::Numa).size(),
               gpus = g.ofType(NodeType::Gpu).size(), nics = g.ofType(NodeType::Nic).size();
  int logical = 0;
  for (int c : g.ofType(NodeType::Numa)) logical += g.node(c).ncpus;
  add(&out, "Topology: %zu NUMA node(s), %d CPU(s), %zu CPU domain(s), %zu GPU(s), %zu NIC(s)\n", numa, logical, cpus,
      gpus, nics);
  if (info) {
    add(&out, "  source: %s, backend: %s, GPUs: %s\n", info->source.c_str(), info->backend.c_str(), info->gpus.c_str());
  }
  std::vector<bool> seen(g.nodes().size(), false), linkShown(g.links().size(), false);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (seen[i] || (n.type != NodeType::Cpu && n.type != NodeType::NvSwitch && n.type != NodeType::Leaf &&
                    n.type != NodeType::Spine))
      continue;
    seen[i] = true;
    add(&out, "  %s numa=%d ncpus=%d %s\n", label(n).c_str(), n.numa, n.ncpus, n.name.c_str());
    tree(g, static_cast<int>(i), 2, &seen, &linkShown, &out);
  }
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (!seen[i]) add(&out, "  %s\n", label(g.nodes()[i]).c_str());
  for (size_t l = 0; l < g.links().size(); ++l) {
    if (linkShown[l]) continue;
    const Link& k = g.links()[l];
    add(&out, "  link %s <-> %s: %s x%d, %.1f GB/s, %.2f us\n", label(g.node(k.a)).c_str(), label(g.node(k.b)).c_str(),
        linkTypeName(k.type), k.count, k.bwGBs, k.latUs);
  }
  return out;
}

std::string pathMatrix(const Graph& g) {
  std::vector<int> ends;
  for (NodeType t : {NodeType::Gpu, NodeType::Nic, NodeType::Cpu})
    for (int i : g.ofType(t)) ends.push_back(i);
  std::string out = "Paths (class, bottleneck GB/s, latency us):\n";
  for (size_t i = 0; i < ends.size(); ++i)
    for (size_t j = i + 1; j < ends.size(); ++j) {
      const Path p = g.path(ends[i], ends[j]);
      add(&out, "  %-32s -> %-32s %s %7.1f %6.2f\n", label(g.node(ends[i])).c_str(), label(g.node(ends[j])).c_str(),
          pathTypeName(p.type), p.type == PathType::Dis ? 0.0 : p.bwGBs, p.latUs);
    }
  if (ends.size() < 2) out += "  (fewer than two endpoints)\n";
  return out;
}

std::string describeIslands(const IslandMap& map, IslandRule rule, const FabricLevels* fromFabricFile) {
  std::string out;
  add(&out, "Islands: %zu for %zu ranks (by %s)\n", map.members.size(), map.islandOf.size(), islandRuleName(rule));
  for (size_t i = 0; i < map.members.size(); ++i) {
    add(&out, "  island %zu:", i);
    for (int r : map.members[i]) add(&out, " %d", r);
    out += "\n";
  }
  // Only a fabric file's numbers reach the cost model; otherwise it prices the transports.
  if (fromFabricFile != nullptr)
    add(&out, "Fabric file levels: intra-island %.2f GB/s %.2f us, inter-island %.2f GB/s %.2f us\n",
        fromFabricFile->intraBwGBs, fromFabricFile->intraLatUs, fromFabricFile->interBwGBs,
        fromFabricFile->interLatUs);
  return out;
}

}  // namespace atl::topo
