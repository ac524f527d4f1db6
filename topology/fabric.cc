#include "topology/fabric.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

namespace atl::topo {

const char* levelName(Level l) {
  switch (l) {
    case Level::Host:
      return "host";
    case Level::Leaf:
      return "leaf";
    case Level::Island:
      return "island";
    case Level::Group:
      return "group";
    case Level::Global:
      return "global";
  }
  return "?";
}

void Fabric::buildIndex() {
  byName_.clear();
  byShort_.clear();
  for (size_t i = 0; i < hosts.size(); ++i) {
    const std::string& h = hosts[i].host;
    byName_.emplace(h, static_cast<uint32_t>(i));
    byShort_.emplace(h.substr(0, h.find('.')), static_cast<uint32_t>(i));
  }
  indexed_ = hosts.size();
}

const FabricHost* Fabric::findHost(const std::string& name) const {
  if (indexed_ == hosts.size() && indexed_ > 0) {
    if (auto it = byName_.find(name); it != byName_.end()) return &hosts[it->second];
    const std::string shortName = name.substr(0, name.find('.'));
    // The first host in file order that is named shortName or whose short name it is.
    size_t best = hosts.size();
    if (auto it = byName_.find(shortName); it != byName_.end()) best = it->second;
    if (auto it = byShort_.find(shortName); it != byShort_.end()) best = std::min<size_t>(best, it->second);
    return best < hosts.size() ? &hosts[best] : nullptr;
  }
  for (const FabricHost& h : hosts)
    if (h.host == name) return &h;
  const std::string shortName = name.substr(0, name.find('.'));
  for (const FabricHost& h : hosts)
    if (h.host == shortName || h.host.substr(0, h.host.find('.')) == shortName) return &h;
  return nullptr;
}

namespace {

// Found by tests/fuzz/fuzz_topology: from_chars takes "inf" and "nan", which the cost model
// cannot use.
bool toNum(const std::string& s, double* out) {
  const char* end = s.data() + s.size();
  const auto r = std::from_chars(s.data(), end, *out);
  return r.ec == std::errc() && r.ptr == end && std::isfinite(*out);
}

// Names are what host names are made of, and short enough for RankDesc::hostName. Anything else
// (control bytes, NUL, a second "[a-b]" left in a host name after expansion) would not survive
// formatFabric and parseFabric again, and could never match a real host (fuzz_topology found it).
constexpr size_t kMaxName = 63;
constexpr size_t kMaxHosts = size_t{1} << 20;
bool goodName(const std::string& s) {
  if (s.empty() || s.size() > kMaxName) return false;
  for (unsigned char c : s)
    if (!std::isalnum(c) && c != '.' && c != '-' && c != '_') return false;
  return true;
}

std::string num(double v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// "node[01-16]" -> node01 ... node16 (width kept from the first bound); anything else is itself.
bool expandHosts(const std::string& item, std::vector<std::string>* out, std::string* why) {
  const size_t lb = item.find('[');
  if (lb == std::string::npos) {
    out->push_back(item);
    return true;
  }
  const size_t rb = item.find(']', lb);
  const size_t dash = item.find('-', lb);
  if (rb == std::string::npos || dash == std::string::npos || dash > rb) return *why = "bad host range " + item, false;
  const std::string lo = item.substr(lb + 1, dash - lb - 1), hi = item.substr(dash + 1, rb - dash - 1);
  int a = 0, b = 0;
  if (lo.empty() || hi.empty() || std::from_chars(lo.data(), lo.data() + lo.size(), a).ptr != lo.data() + lo.size() ||
      std::from_chars(hi.data(), hi.data() + hi.size(), b).ptr != hi.data() + hi.size() || b < a || b - a > 1000000)
    return *why = "bad host range " + item, false;
  const std::string prefix = item.substr(0, lb), suffix = item.substr(rb + 1);
  for (int i = a; i <= b; ++i) {
    std::string n = std::to_string(i);
    if (n.size() < lo.size()) n.insert(0, lo.size() - n.size(), '0');
    out->push_back(prefix + n + suffix);
  }
  return true;
}

}  // namespace

Result<Fabric> parseFabric(const std::string& text) {
  Fabric f;
  std::istringstream in(text);
  std::string line;
  int lineNo = 0;
  std::set<std::string> seenHosts, seenLeaves;
  auto bad = [&](const std::string& why) {
    return ATOLL_ERROR(ncclInvalidArgument, "fabric line %d: %s", lineNo, why.c_str());
  };
  while (std::getline(in, line)) {
    ++lineNo;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    std::string kind, name;
    if (!(words >> kind)) continue;
    if (!(words >> name)) return bad("'" + kind + "' needs a name");
    std::vector<std::pair<std::string, std::string>> kv;
    for (std::string w; words >> w;) {
      const size_t eq = w.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == w.size()) return bad("expected key=value, got '" + w + "'");
      kv.emplace_back(w.substr(0, eq), w.substr(eq + 1));
    }
    if (kind == "level") {
      int idx = -1;
      for (int l = 0; l < kLevels; ++l)
        if (name == levelName(static_cast<Level>(l))) idx = l;
      if (idx < 0) return bad("unknown level '" + name + "' (host, leaf, island, group, global)");
      LevelSpec& s = f.levels[static_cast<size_t>(idx)];
      if (s.set) return bad("level " + name + " given twice");
      s.set = true;
      bool haveBw = false;
      for (const auto& [k, v] : kv) {
        double x = 0;
        if (!toNum(v, &x)) return bad("'" + v + "' is not a number");
        if (k == "bw") {
          if (x <= 0) return bad("bw must be > 0");
          s.bwGBs = x;
          haveBw = true;
        } else if (k == "lat") {
          if (x < 0) return bad("lat must be >= 0");
          s.latUs = x;
        } else if (k == "oversub") {
          if (x < 1) return bad("oversub must be >= 1");
          s.oversub = x;
        } else {
          return bad("unknown level key '" + k + "' (bw, lat, oversub)");
        }
      }
      if (!haveBw) return bad("level " + name + " needs bw=");
    } else if (kind == "leaf") {
      if (!goodName(name)) return bad("bad leaf name (letters, digits, '.', '-', '_'; at most 63)");
      if (!seenLeaves.insert(name).second) return bad("leaf " + name + " given twice");
      std::string island = name, group;
      std::vector<std::string> hosts;
      for (const auto& [k, v] : kv) {
        if (k == "island") {
          island = v;
        } else if (k == "group") {
          group = v;
        } else if (k == "hosts") {
          size_t pos = 0;
          while (pos <= v.size()) {
            size_t comma = v.find(',', pos);
            if (comma == std::string::npos) comma = v.size();
            const std::string item = v.substr(pos, comma - pos);
            std::string why;
            if (item.empty()) return bad("empty host name in hosts=");
            if (!expandHosts(item, &hosts, &why)) return bad(why);
            if (hosts.size() > kMaxHosts) return bad("more than 1048576 hosts");
            pos = comma + 1;
          }
        } else {
          return bad("unknown leaf key '" + k + "' (island, group, hosts)");
        }
      }
      if (hosts.empty()) return bad("leaf " + name + " needs hosts=");
      if (group.empty()) group = island;
      if (!goodName(island) || !goodName(group)) return bad("bad island or group name");
      if (f.hosts.size() + hosts.size() > kMaxHosts) return bad("more than 1048576 hosts");
      for (const std::string& h : hosts) {
        if (!goodName(h)) return bad("bad host name (letters, digits, '.', '-', '_'; at most 63)");
        if (!seenHosts.insert(h).second) return bad("host " + h + " is on two leaves");
        f.hosts.push_back(FabricHost{h, name, island, group});
      }
    } else {
      return bad("unknown keyword '" + kind + "' (level, leaf)");
    }
  }
  // An island must sit in one group, or "which group" has no answer.
  std::map<std::string, std::string> groupOfIsland;
  for (const FabricHost& h : f.hosts) {
    const auto [it, fresh] = groupOfIsland.emplace(h.island, h.group);
    if (!fresh && it->second != h.group)
      return ATOLL_ERROR(ncclInvalidArgument, "fabric: island %s is in groups %s and %s", h.island.c_str(),
                         it->second.c_str(), h.group.c_str());
  }
  f.buildIndex();
  return f;
}

Result<Fabric> readFabricFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) return ATOLL_ERROR(ncclInvalidArgument, "cannot read fabric file %s", path.c_str());
  std::stringstream ss;
  ss << file.rdbuf();
  auto f = parseFabric(ss.str());
  if (!f.ok()) return ATOLL_ERROR(f.status().code(), "in fabric file %s", path.c_str());
  return f;
}

std::string formatFabric(const Fabric& f) {
  std::string out = "# Atoll fabric (docs/TOPOLOGY.md)\n";
  for (int l = 0; l < kLevels; ++l) {
    const LevelSpec& s = f.levels[static_cast<size_t>(l)];
    if (!s.set) continue;
    out += std::string("level ") + levelName(static_cast<Level>(l)) + " bw=" + num(s.bwGBs) + " lat=" + num(s.latUs) +
           " oversub=" + num(s.oversub) + "\n";
  }
  for (size_t i = 0; i < f.hosts.size();) {
    const FabricHost& h = f.hosts[i];
    out += "leaf " + h.leaf + " island=" + h.island + " group=" + h.group + " hosts=";
    bool first = true;
    for (; i < f.hosts.size() && f.hosts[i].leaf == h.leaf; ++i) {
      out += (first ? "" : ",") + f.hosts[i].host;
      first = false;
    }
    out += "\n";
  }
  return out;
}

}  // namespace atl::topo
