// Detection of this node's topology: CPUs and NUMA nodes, the PCI bridges above NICs and GPUs,
// NICs (netdevs and RDMA devices) and GPUs (NVML). hwloc is used when the build found it; otherwise
// /sys/devices/system/node and /proc/cpuinfo give the same graph with less detail.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "topology/graph.h"

namespace atl::topo {

struct DetectInfo {
  std::string backend;  // "hwloc" or "sysfs"
  std::string gpus;     // what NVML said
  std::string source;   // "detected" or the NCCL_TOPO_FILE path
};

/// True when this build has hwloc.
bool haveHwloc();

/// Detects from the running system.
Result<Graph> detectLocal(DetectInfo* info = nullptr);

/// What init uses: NCCL_TOPO_FILE if set, else detectLocal(); then writes NCCL_TOPO_DUMP_FILE if set
/// (a failed dump warns and does not fail).
Result<Graph> localTopology(DetectInfo* info = nullptr);

namespace detail {
// Backends fill CPUs/NUMA nodes and the PCI NICs they can see.
struct PciNic {
  std::string busid, name;
  int numa = -1;
};
/// One CPU node (the NUMA domain's host bridge, as in NCCL) and its memory node, SMP-linked to the others.
void addNumaDomain(Graph* g, int numa, int ncpus, int package, const std::string& model);
Status detectCpusSysfs(Graph* g);
Status detectCpusHwloc(Graph* g, std::vector<PciNic>* nics);
std::vector<PciNic> nicsSysfs();
}  // namespace detail

}  // namespace atl::topo
