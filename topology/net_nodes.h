// The devices of the network a communicator uses, as nodes of the local topology graph (NCCL's NET
// nodes). Each hangs below the NIC or PCI function it drives, so the graph's paths say which device
// is nearest a rank's GPU or CPU, and a host's RankDesc counts the devices its ranks really share.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "topology/graph.h"

namespace atl::topo {

/// What a net reports of one device (a plugin's getProperties, reduced to what the graph uses).
struct NetDeviceDesc {
  std::string name;
  std::string pciPath;  // its sysfs path; empty for a virtual device
  double speedMbps = 0;
  double latUs = 0;
  int ptrSupport = 0;
};

/// Adds one Net node per device, in order, and returns their indices. A device hangs below the
/// NIC or PCI node of the last bus id in its pciPath; one the graph lacks hangs below the CPU of
/// its NUMA node (from sysfs), and a virtual device below the first CPU.
std::vector<int> addNetDevices(Graph* g, std::span<const NetDeviceDesc> devices);

/// Where a rank's traffic starts: GPU `cudaDev` when the graph has it (pass -1 for CPU buffers),
/// else the CPU of NUMA node `numa`, else the first CPU; -1 for a graph without CPUs.
int rankAnchor(const Graph& g, int cudaDev, int numa);

struct NetChoice {
  int device = 0;  // index into the netNodes given
  Path path;       // anchor -> that device
  int equals = 1;  // devices as near as it (the ones `spread` chose among)
};
/// The device nearest `anchor`: best path class, then widest (within 1%). Among equally
/// near devices `spread` (the rank's device index) picks round-robin, so a host's ranks share them
/// out as NCCL's per-GPU NIC choice does. Requires a non-empty netNodes.
NetChoice nearestNetDevice(const Graph& g, int anchor, std::span<const int> netNodes, int spread);

}  // namespace atl::topo
