#include "topology/sysfs.h"

#include <dirent.h>
#include <sched.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace atl::topo::sysfs {

std::string readLine(const std::string& path) {
  std::ifstream f(path);
  std::string line;
  if (!f || !std::getline(f, line)) return "";
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
  return line;
}

std::vector<int> cpulistCpus(const std::string& list) {
  std::vector<int> cpus;
  size_t pos = 0;
  while (pos < list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    const std::string item = list.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    if (!item.empty()) {
      const int lo = std::atoi(item.c_str());
      const int hi = dash == std::string::npos ? lo : std::atoi(item.c_str() + dash + 1);
      for (int c = lo; c <= hi; ++c) cpus.push_back(c);
    }
    pos = comma + 1;
  }
  return cpus;
}

int cpulistCount(const std::string& list) { return static_cast<int>(cpulistCpus(list).size()); }

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = ::readdir(d)) out.emplace_back(e->d_name);
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

int numaOfThisThread() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return -1;
  int best = -1, bestCount = 0;
  for (const std::string& e : listDir("/sys/devices/system/node")) {
    if (e.rfind("node", 0) != 0 || e.size() < 5 || !std::isdigit(static_cast<unsigned char>(e[4]))) continue;
    const int node = std::atoi(e.c_str() + 4);
    const std::string list = readLine("/sys/devices/system/node/" + e + "/cpulist");
    int count = 0;
    for (int c : cpulistCpus(list)) count += c >= 0 && c < CPU_SETSIZE && CPU_ISSET(c, &allowed) ? 1 : 0;
    if (count > bestCount) best = node, bestCount = count;
  }
  return best;
}

std::string canonicalBusId(const std::string& busid) {
  unsigned dom = 0, bus = 0, dev = 0, fn = 0;
  if (std::sscanf(busid.c_str(), "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) {
    dom = 0;
    if (std::sscanf(busid.c_str(), "%x:%x.%x", &bus, &dev, &fn) != 3) return busid;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", dom & 0xffff, bus & 0xff, dev & 0x1f, fn & 0x7);
  return buf;
}

namespace {
bool looksLikeBusId(const std::string& s) {
  unsigned a, b, c, d;
  char tail;
  return s.size() == 12 && std::sscanf(s.c_str(), "%4x:%2x:%2x.%1x%c", &a, &b, &c, &d, &tail) == 4;
}
std::string realPath(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) ? std::string(buf) : std::string();
}
}  // namespace

std::vector<std::string> pciBridgeChain(const std::string& busid) {
  std::vector<std::string> chain;
  const std::string path = realPath("/sys/bus/pci/devices/" + canonicalBusId(busid));
  size_t pos = 0;
  while (pos < path.size()) {
    size_t slash = path.find('/', pos);
    if (slash == std::string::npos) slash = path.size();
    const std::string part = path.substr(pos, slash - pos);
    if (looksLikeBusId(part)) chain.push_back(part);
    pos = slash + 1;
  }
  if (!chain.empty()) chain.pop_back();  // the device itself
  return chain;
}

int pciNumaNode(const std::string& busid) {
  const std::string v = readLine("/sys/bus/pci/devices/" + canonicalBusId(busid) + "/numa_node");
  return v.empty() ? -1 : std::atoi(v.c_str());
}

double pciLinkGBs(const std::string& busid) {
  const std::string dir = "/sys/bus/pci/devices/" + canonicalBusId(busid);
  const double gts = std::atof(readLine(dir + "/current_link_speed").c_str());  // "16.0 GT/s PCIe"
  const int width = std::atoi(readLine(dir + "/current_link_width").c_str());
  if (gts <= 0 || width <= 0) return 0;
  // Gen3+ encodes 128 bits in 130; Gen1/2 (<= 5 GT/s) 8 in 10.
  const double efficiency = gts > 5.0 ? 128.0 / 130.0 : 0.8;
  return gts * width * efficiency / 8.0;
}

double netSpeedMbps(const std::string& netdev) {
  const std::string v = readLine("/sys/class/net/" + netdev + "/speed");
  const double s = v.empty() ? 0 : std::atof(v.c_str());
  return s > 0 ? s : 0;  // -1 when the driver does not know (virtio, down links)
}

std::string busIdInPath(const std::string& path) {
  size_t end = path.size();
  while (end > 0) {
    const size_t slash = path.rfind('/', end - 1);
    const size_t start = slash == std::string::npos ? 0 : slash + 1;
    const std::string part = path.substr(start, end - start);
    if (looksLikeBusId(part)) return part;
    if (slash == std::string::npos) break;
    end = slash;
  }
  return "";
}

std::string netdevBusId(const std::string& netdev) {
  // virtio-net sits one level below its PCI function (.../0000:00:03.0/virtio2), a USB NIC below
  // its controller: the nearest PCI function up the path is where its traffic enters the host.
  return busIdInPath(realPath("/sys/class/net/" + netdev + "/device"));
}

std::vector<IbDevice> infinibandDevices() {
  std::vector<IbDevice> out;
  DIR* d = ::opendir("/sys/class/infiniband");
  if (!d) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    IbDevice dev;
    dev.name = name;
    const std::string path = realPath("/sys/class/infiniband/" + name + "/device");
    const size_t slash = path.rfind('/');
    dev.busid = slash == std::string::npos ? "" : path.substr(slash + 1);
    // "100 Gb/sec (4X EDR)" on port 1; multi-port HCAs report the first port.
    dev.speedMbps = std::atof(readLine("/sys/class/infiniband/" + name + "/ports/1/rate").c_str()) * 1000.0;
    out.push_back(dev);
  }
  ::closedir(d);
  return out;
}

}  // namespace atl::topo::sysfs
