// The fallback when hwloc is absent: NUMA nodes and their CPUs from /sys/devices/system/node, the
// CPU model and package from /proc/cpuinfo, NICs from /sys/class/net.

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "topology/detect.h"
#include "topology/sysfs.h"

namespace atl::topo::detail {

namespace {

constexpr double kSmpLatUs = 0.6;
constexpr double kMemLatUs = 0.1;

struct CpuInfo {
  int logical = 0;
  std::string model;
  std::map<int, int> packageOfCpu;  // processor -> physical id
};

CpuInfo readCpuInfo() {
  CpuInfo info;
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  int processor = -1;
  while (std::getline(f, line)) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    const std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "processor") {
      processor = std::atoi(value.c_str());
      ++info.logical;
    } else if (key == "model name" && info.model.empty()) {
      info.model = value;
    } else if (key == "physical id" && processor >= 0) {
      info.packageOfCpu[processor] = std::atoi(value.c_str());
    }
  }
  return info;
}

int firstCpu(const std::string& cpulist) { return cpulist.empty() ? -1 : std::atoi(cpulist.c_str()); }

}  // namespace

void addNumaDomain(Graph* g, int numa, int ncpus, int package, const std::string& model) {
  Node cpu;
  cpu.type = NodeType::Cpu;
  cpu.id = "cpu" + std::to_string(numa);
  cpu.name = model;
  cpu.numa = numa;
  cpu.index = package;
  cpu.ncpus = ncpus;
  const std::vector<int> others = g->ofType(NodeType::Cpu);
  const int c = g->addNode(cpu);
  Node mem;
  mem.type = NodeType::Numa;
  mem.id = "numa" + std::to_string(numa);
  mem.numa = numa;
  mem.index = numa;
  mem.ncpus = ncpus;
  const int m = g->addNode(mem);
  g->addLink(c, m, LinkType::Local, kSmpGBs, kMemLatUs);
  for (int o : others) g->addLink(o, c, LinkType::Smp, kSmpGBs, kSmpLatUs);
}

Status detectCpusSysfs(Graph* g) {
  const CpuInfo info = readCpuInfo();
  bool any = false;
  for (const std::string& e : sysfs::listDir("/sys/devices/system/node")) {
    if (e.rfind("node", 0) != 0 || e.size() < 5 || e.find_first_not_of("0123456789", 4) != std::string::npos) continue;
    const int numa = std::atoi(e.c_str() + 4);
    const std::string list = sysfs::readLine("/sys/devices/system/node/" + e + "/cpulist");
    const int first = firstCpu(list);
    const auto pkg = info.packageOfCpu.find(first);
    addNumaDomain(g, numa, sysfs::cpulistCount(list), pkg == info.packageOfCpu.end() ? 0 : pkg->second, info.model);
    any = true;
  }
  if (!any) {
    // Kernels without NUMA support: one domain holding every CPU.
    if (info.logical == 0) return ATOLL_ERROR(ncclSystemError, "topology: no NUMA node and no CPU in /proc/cpuinfo");
    addNumaDomain(g, 0, info.logical, 0, info.model);
  }
  return Status::Ok();
}

std::vector<PciNic> nicsSysfs() {
  std::vector<PciNic> out;
  for (const std::string& name : sysfs::listDir("/sys/class/net")) {
    if (name == "." || name == "..") continue;
    const std::string busid = sysfs::netdevBusId(name);
    if (busid.empty()) continue;  // loopback, bridges, veth, ifb: not a path off the host
    out.push_back(PciNic{busid, name, sysfs::pciNumaNode(busid)});
  }
  return out;
}

}  // namespace atl::topo::detail
