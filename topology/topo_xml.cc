#include "topology/topo_xml.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

namespace atl::topo {

namespace {

constexpr double kSmpLatUs = 0.6;  // as detection links sockets (detect_sysfs.cc)

std::string num(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// Finite only: from_chars takes "inf" and "nan", and an infinite NIC speed or link bandwidth would
// reach paths and the cost model (tests/fuzz/fuzz_topology holds every loaded graph to this).
bool parseNum(const std::string& s, double* out) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, *out);
  return r.ec == std::errc() && r.ptr == end && std::isfinite(*out);
}
bool parseInt(const std::string& s, int* out) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, *out);
  return r.ec == std::errc() && r.ptr == end;
}

bool isPciDevice(NodeType t) { return t == NodeType::Pci || t == NodeType::Gpu || t == NodeType::Nic; }
// Element name <-> node type; the tree is built from these.
bool typeFromName(const std::string& n, NodeType* t) {
  static const std::map<std::string, NodeType> names = {
      {"gpu", NodeType::Gpu}, {"cpu", NodeType::Cpu},           {"numa", NodeType::Numa}, {"pci", NodeType::Pci},
      {"nic", NodeType::Nic}, {"nvswitch", NodeType::NvSwitch}, {"leaf", NodeType::Leaf}, {"spine", NodeType::Spine}};
  const auto it = names.find(n);
  if (it == names.end()) return false;
  *t = it->second;
  return true;
}
// A device's PCI class as NCCL reads it (kvDictPciClass): 0x03.. display (GPU), 0x02.. network (NIC).
bool typeFromPciClass(const std::string& cls, NodeType* t) {
  if (cls.rfind("0x03", 0) == 0) return *t = NodeType::Gpu, true;
  if (cls.rfind("0x02", 0) == 0) return *t = NodeType::Nic, true;
  return false;
}
bool hasNodeChild(const XmlElement& e) {
  NodeType t;
  for (const XmlElement& c : e.children)
    if (typeFromName(c.name, &t)) return true;
  return false;
}
bool linkFromName(const std::string& n, LinkType* t) {
  for (LinkType c : {LinkType::NvLink, LinkType::Pci, LinkType::Smp, LinkType::Net, LinkType::Local})
    if (n == linkTypeName(c)) return *t = c, true;
  return false;
}

std::string ref(const Node& n) { return std::string(nodeTypeName(n.type)) + ":" + n.id; }

void nodeAttrs(const Node& n, XmlElement* e) {
  e->set(isPciDevice(n.type) ? "busid" : "id", n.id);
  if (n.numa >= 0) e->set("numaid", std::to_string(n.numa));
  if (n.index >= 0) e->set("index", std::to_string(n.index));
  if (n.ncpus) e->set("ncpus", std::to_string(n.ncpus));
  if (n.type == NodeType::Nic) {
    XmlElement net{"net", {}, {}};
    if (!n.name.empty()) net.set("name", n.name);
    if (n.speedMbps) net.set("speed", num(n.speedMbps));
    e->children.push_back(std::move(net));
  } else if (!n.name.empty()) {
    e->set("name", n.name);
  }
}

// Tree children: PCI/local links from a CPU (or PCI switch) down to devices, each visited once.
bool isTreeLink(const Graph& g, const Link& l, int parent, int child) {
  const NodeType pt = g.node(parent).type, ct = g.node(child).type;
  if (l.type == LinkType::Local) return pt == NodeType::Cpu && ct == NodeType::Numa;
  if (l.type != LinkType::Pci) return false;
  return (pt == NodeType::Cpu || pt == NodeType::Pci) && isPciDevice(ct);
}

void emitTree(const Graph& g, int u, std::vector<bool>* placed, std::vector<bool>* linkUsed, XmlElement* e) {
  for (int l : g.linksOf(u)) {
    const int v = g.other(l, u);
    const Link& k = g.links()[static_cast<size_t>(l)];
    if ((*placed)[static_cast<size_t>(v)] || (*linkUsed)[static_cast<size_t>(l)] || !isTreeLink(g, k, u, v)) continue;
    (*placed)[static_cast<size_t>(v)] = true;
    (*linkUsed)[static_cast<size_t>(l)] = true;
    XmlElement c{nodeTypeName(g.node(v).type), {}, {}};
    nodeAttrs(g.node(v), &c);
    c.set("link_bw", num(k.bwGBs));
    c.set("link_lat", num(k.latUs));
    emitTree(g, v, placed, linkUsed, &c);
    e->children.push_back(std::move(c));
  }
}

class Loader {
 public:
  Result<Graph> run(const XmlElement& root) {
    if (root.name != "system") return err(root, "root element must be <system>, not <" + root.name + ">");
    if (const std::string* v = root.attr("version"); v && *v != "1")
      return err(root, "unsupported version \"" + *v + "\" (expected 1)");
    std::vector<const XmlElement*> links;
    for (const XmlElement& c : root.children) {
      if (c.name == "link") {
        links.push_back(&c);
        continue;
      }
      NodeType t;
      if (!typeFromName(c.name, &t)) continue;
      if (!element(c, -1, t)) return status_;
    }
    for (const auto& [gpu, e] : nvlinks_)
      if (!nvlink(gpu, *e)) return status_;
    for (const XmlElement* e : links)
      if (!link(*e)) return status_;
    // NCCL's format lists no CPU-to-CPU links (NCCL joins a node's CPUs itself), so its CPUs are
    // joined as detection joins them, unless the file links a pair.
    for (size_t i = 0; i < ncclCpus_.size(); ++i)
      for (size_t j = 0; j < i; ++j)
        if (!linked(ncclCpus_[j], ncclCpus_[i]))
          g_.addLink(ncclCpus_[j], ncclCpus_[i], LinkType::Smp, kSmpGBs, kSmpLatUs);
    return std::move(g_);
  }

 private:
  Status err(const XmlElement& e, const std::string& why) {
    return ATOLL_ERROR(ncclInvalidArgument, "topology XML <%s>: %s", e.name.c_str(), why.c_str());
  }
  bool fail(const XmlElement& e, const std::string& why) {
    status_ = err(e, why);
    return false;
  }
  bool intAttr(const XmlElement& e, const char* key, int* out) {
    const std::string* v = e.attr(key);
    if (!v) return true;
    if (!parseInt(*v, out)) return fail(e, std::string("attribute ") + key + "=\"" + *v + "\" is not an integer");
    return true;
  }
  bool numAttr(const XmlElement& e, const char* key, double* out) {
    const std::string* v = e.attr(key);
    if (!v) return true;
    if (!parseNum(*v, out) || *out < 0)
      return fail(e, std::string("attribute ") + key + "=\"" + *v + "\" is not a non-negative number");
    return true;
  }

  bool element(const XmlElement& e, int parent, NodeType t) {
    // NCCL writes a device as <pci busid=X><gpu .../></pci>: the pci element is the device itself.
    const XmlElement* body = &e;
    if (t == NodeType::Pci && e.children.size() == 1 && !e.children[0].attr("busid")) {
      NodeType inner;
      if (typeFromName(e.children[0].name, &inner) && (inner == NodeType::Gpu || inner == NodeType::Nic)) {
        t = inner;
        body = &e.children[0];
      }
    }
    // A device given only as a classed <pci> leaf (Azure's ND-series and AWS's p4d files): NCCL keeps
    // the tree and lets detection fill in the <gpu>/<nic>. The file is all we have, so the class says.
    NodeType byClass;
    if (t == NodeType::Pci && body == &e && !hasNodeChild(e))
      if (const std::string* cls = e.attr("class"); cls && typeFromPciClass(*cls, &byClass)) t = byClass;
    const std::string* busid = e.attr("busid");
    if (e.name == "nic" && (!busid || busid->empty()) && parent >= 0 && g_.node(parent).type == NodeType::Cpu)
      return netsUnderCpu(e, parent);
    Node n;
    n.type = t;
    const char* idKey = isPciDevice(t) ? "busid" : "id";
    const std::string* id = e.attr(idKey);
    const std::string* numaid = e.attr("numaid");
    if (id && !id->empty())
      n.id = *id;
    else if (t == NodeType::Cpu && numaid)
      n.id = "cpu" + *numaid;  // NCCL names a CPU by its NUMA node only
    else
      return fail(e, std::string("missing ") + idKey);
    if (g_.find(t, n.id) >= 0) return fail(e, "duplicate " + ref(n));
    if (!intAttr(e, "numaid", &n.numa) || !intAttr(e, "index", &n.index) || !intAttr(e, "ncpus", &n.ncpus))
      return false;
    if (body != &e && !intAttr(*body, "dev", &n.index)) return false;
    if (const std::string* nm = body->attr("name")) n.name = *nm;
    if (t == NodeType::Nic) {
      for (const XmlElement& c : body->children)
        if (c.name == "net") {
          if (const std::string* nm = c.attr("name")) n.name = *nm;
          if (!numAttr(c, "speed", &n.speedMbps)) return false;
          break;
        }
    }
    if (parent >= 0 && n.numa < 0) n.numa = g_.node(parent).numa;
    double bw = t == NodeType::Numa ? kSmpGBs : kPciGen4x16GBs, lat = t == NodeType::Numa ? 0.1 : 0.5;
    if (!numAttr(e, "link_bw", &bw) || !numAttr(e, "link_lat", &lat)) return false;
    const bool ncclCpu = t == NodeType::Cpu && !(id && !id->empty());
    const int self = g_.addNode(std::move(n));
    if (ncclCpu) ncclCpus_.push_back(self);
    if (parent >= 0) g_.addLink(parent, self, t == NodeType::Numa ? LinkType::Local : LinkType::Pci, bw, lat);
    for (const XmlElement& c : body->children) {
      if (c.name == "nvlink" && t == NodeType::Gpu) {
        nvlinks_.emplace_back(self, &c);
        continue;
      }
      NodeType ct;
      if (!typeFromName(c.name, &ct)) continue;
      if (ct == NodeType::Cpu || ct == NodeType::Leaf || ct == NodeType::Spine || ct == NodeType::NvSwitch)
        return fail(c, "<" + c.name + "> cannot nest inside <" + e.name + ">");
      if (!element(c, self, ct)) return false;
    }
    return true;
  }

  // NCCL puts every NIC it finds no PCI device for (a VM's virtual NIC, say) in one <nic> without a
  // busid under a <cpu>, one <net> each, and hangs it off that CPU. Here each <net> is a NIC of its
  // own, named by its device, on the CPU's NUMA node, with the link any device nested without
  // link_bw gets. Its dump carries the name as busid and loads back the same.
  bool netsUnderCpu(const XmlElement& e, int cpu) {
    double bw = kPciGen4x16GBs, lat = 0.5;
    if (!numAttr(e, "link_bw", &bw) || !numAttr(e, "link_lat", &lat)) return false;
    const char* why = "missing busid (under a <cpu>, a <nic> without one needs a <net name=..> per device)";
    int nets = 0;
    for (const XmlElement& c : e.children) {
      if (c.name != "net") continue;
      const std::string* name = c.attr("name");
      if (!name || name->empty()) return fail(e, why);
      Node n;
      n.type = NodeType::Nic;
      n.id = n.name = *name;
      n.numa = g_.node(cpu).numa;
      if (!numAttr(c, "speed", &n.speedMbps)) return false;
      if (g_.find(NodeType::Nic, n.id) >= 0) return fail(c, "duplicate " + ref(n));
      g_.addLink(cpu, g_.addNode(std::move(n)), LinkType::Pci, bw, lat);
      ++nets;
    }
    return nets > 0 || fail(e, why);
  }

  bool linked(int a, int b) const {
    for (int l : g_.linksOf(a))
      if (g_.other(l, a) == b) return true;
    return false;
  }

  int resolve(const std::string& r) const {
    const size_t colon = r.find(':');
    NodeType t;
    if (colon == std::string::npos || !typeFromName(r.substr(0, colon), &t)) return -1;
    return g_.find(t, r.substr(colon + 1));
  }

  bool nvlink(int gpu, const XmlElement& e) {
    const std::string* target = e.attr("target");
    if (!target || target->empty()) return fail(e, "missing target");
    const std::string* tclass = e.attr("tclass");
    const bool toSwitch = tclass && (*tclass == "nvswitch" || *tclass == "0x068000");
    int peer = g_.find(toSwitch ? NodeType::NvSwitch : NodeType::Gpu, *target);
    if (peer < 0 && toSwitch) peer = g_.addNode(Node{NodeType::NvSwitch, *target, "", -1, -1, 0, 0});
    if (peer < 0) return fail(e, "target " + *target + " is not a known GPU");
    int count = 1;
    if (!intAttr(e, "count", &count)) return false;
    if (count < 1) return fail(e, "count must be >= 1");
    // Real dumps name the GPU itself (Azure's NC A100 v4 file, for every GPU): it joins nothing.
    if (peer == gpu) return true;
    // NCCL lists the link from both ends; keep one.
    for (int l : g_.linksOf(gpu))
      if (g_.other(l, gpu) == peer && g_.links()[static_cast<size_t>(l)].type == LinkType::NvLink) return true;
    g_.addLink(gpu, peer, LinkType::NvLink, kNvLinkGBs * count, 0.7, count);
    return true;
  }

  bool link(const XmlElement& e) {
    const std::string *a = e.attr("a"), *b = e.attr("b"), *type = e.attr("type");
    if (!a || !b || !type) return fail(e, "needs a=, b= and type=");
    const int ia = resolve(*a), ib = resolve(*b);
    if (ia < 0) return fail(e, "unknown node " + *a + " (write type:id)");
    if (ib < 0) return fail(e, "unknown node " + *b + " (write type:id)");
    if (ia == ib) return fail(e, "link from a node to itself");
    LinkType t;
    if (!linkFromName(*type, &t)) return fail(e, "unknown link type " + *type);
    double bw = 0, lat = 0;
    int count = 1;
    if (!e.attr("bw")) return fail(e, "missing bw");
    if (!numAttr(e, "bw", &bw) || !numAttr(e, "lat", &lat) || !intAttr(e, "count", &count)) return false;
    if (count < 1) return fail(e, "count must be >= 1");
    g_.addLink(ia, ib, t, bw, lat, count);
    return true;
  }

  Graph g_;
  Status status_{ncclInvalidArgument};
  std::vector<std::pair<int, const XmlElement*>> nvlinks_;
  std::vector<int> ncclCpus_;  // <cpu>s named by numaid alone, as NCCL writes them
};

}  // namespace

XmlElement graphToXml(const Graph& g) {
  XmlElement root{"system", {{"version", "1"}}, {}};
  const size_t n = g.nodes().size();
  std::vector<bool> placed(n, false), linkUsed(g.links().size(), false);
  for (int c : g.ofType(NodeType::Cpu)) {
    placed[static_cast<size_t>(c)] = true;
    XmlElement e{"cpu", {}, {}};
    nodeAttrs(g.node(c), &e);
    emitTree(g, c, &placed, &linkUsed, &e);
    root.children.push_back(std::move(e));
  }
  // Whatever hangs off no CPU (switches, fabric nodes, orphan devices) goes at top level.
  for (size_t i = 0; i < n; ++i) {
    if (placed[i]) continue;
    placed[i] = true;
    XmlElement e{nodeTypeName(g.nodes()[i].type), {}, {}};
    nodeAttrs(g.nodes()[i], &e);
    emitTree(g, static_cast<int>(i), &placed, &linkUsed, &e);
    root.children.push_back(std::move(e));
  }
  for (size_t l = 0; l < g.links().size(); ++l) {
    if (linkUsed[l]) continue;
    const Link& k = g.links()[l];
    XmlElement e{"link", {}, {}};
    e.set("a", ref(g.node(k.a)));
    e.set("b", ref(g.node(k.b)));
    e.set("type", linkTypeName(k.type));
    e.set("bw", num(k.bwGBs));
    e.set("lat", num(k.latUs));
    if (k.count != 1) e.set("count", std::to_string(k.count));
    root.children.push_back(std::move(e));
  }
  return root;
}

Result<Graph> graphFromXml(const XmlElement& root) { return Loader().run(root); }

std::string dumpTopology(const Graph& g) { return "<?xml version=\"1.0\"?>\n" + writeXml(graphToXml(g)); }

Result<Graph> loadTopology(const std::string& xmlText) {
  ATOLL_ASSIGN_OR_RETURN(XmlElement root, parseXml(xmlText));
  return graphFromXml(root);
}

Status writeTopologyFile(const Graph& g, const std::string& path) {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return ATOLL_ERROR(ncclSystemError, "cannot write topology file %s", path.c_str());
  f << dumpTopology(g);
  f.close();
  if (!f) return ATOLL_ERROR(ncclSystemError, "error writing topology file %s", path.c_str());
  return Status::Ok();
}

Result<Graph> readTopologyFile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return ATOLL_ERROR(ncclInvalidArgument, "cannot read topology file %s", path.c_str());
  std::stringstream ss;
  ss << f.rdbuf();
  auto g = loadTopology(ss.str());
  if (!g.ok()) return ATOLL_ERROR(g.status().code(), "in topology file %s", path.c_str());
  return g;
}

}  // namespace atl::topo
