// GPUs through NVML, loaded with dlopen at run time so nothing links against the driver: a host
// without libnvidia-ml.so.1 (or without GPUs) simply has none.
#pragma once

#include <string>
#include <vector>

namespace atl::topo {

struct NvmlGpu {
  int index = -1;
  std::string busid;  // canonical dddd:bb:dd.f
  std::string name;
  /// NVLink peers: bus id (canonical) -> active link count; peers that are not GPUs are NVSwitches.
  std::vector<std::pair<std::string, int>> nvlinkPeers;
};

/// Empty when NVML is absent or fails; `why` (optional) says which.
std::vector<NvmlGpu> nvmlGpus(std::string* why = nullptr);

}  // namespace atl::topo
