// Small readers of /sys and /proc shared by both detection backends.
#pragma once

#include <string>
#include <vector>

namespace atl::topo::sysfs {

/// First line of a file, trimmed; empty if unreadable.
std::string readLine(const std::string& path);
/// Entries of a directory, sorted ("." and ".." included); empty if unreadable.
std::vector<std::string> listDir(const std::string& dir);
/// CPUs of a kernel cpulist ("0-3,8,10-11"), and their number.
std::vector<int> cpulistCpus(const std::string& list);
int cpulistCount(const std::string& list);
/// The NUMA node holding most of the CPUs this thread may run on (-1 unknown).
int numaOfThisThread();
/// Canonical "dddd:bb:dd.f" (lower case) from any bus id form ("00000000:18:00.0" from NVML too).
std::string canonicalBusId(const std::string& busid);
/// Bus ids of the PCI bridges between the host bridge and `busid`, root port first (device excluded).
std::vector<std::string> pciBridgeChain(const std::string& busid);
/// NUMA node of a PCI device (-1 unknown).
int pciNumaNode(const std::string& busid);
/// Current PCIe link bandwidth of a device in GB/s (0 unknown).
double pciLinkGBs(const std::string& busid);
/// Netdev speed in Mb/s from /sys/class/net/<name>/speed (0 unknown or down).
double netSpeedMbps(const std::string& netdev);
/// The last PCI bus id ("dddd:bb:dd.f") among the components of a sysfs path, empty if none.
std::string busIdInPath(const std::string& path);
/// PCI bus id behind a netdev, empty for virtual devices.
std::string netdevBusId(const std::string& netdev);

struct IbDevice {
  std::string name, busid;
  double speedMbps = 0;
};
/// RDMA devices under /sys/class/infiniband (none on most hosts).
std::vector<IbDevice> infinibandDevices();

}  // namespace atl::topo::sysfs
