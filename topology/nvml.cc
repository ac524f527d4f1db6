#include "topology/nvml.h"

#include <dlfcn.h>

#include <map>

#include "topology/sysfs.h"

namespace atl::topo {

namespace {

// The few NVML declarations used, as in nvml.h (stable ABI since CUDA 11).
using nvmlDevice_t = void*;
using nvmlReturn_t = int;
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
constexpr int kNvmlMaxLinks = 18;

struct Api {
  nvmlReturn_t (*init)();
  nvmlReturn_t (*shutdown)();
  nvmlReturn_t (*count)(unsigned*);
  nvmlReturn_t (*byIndex)(unsigned, nvmlDevice_t*);
  nvmlReturn_t (*pciInfo)(nvmlDevice_t, nvmlPciInfo_t*);
  nvmlReturn_t (*name)(nvmlDevice_t, char*, unsigned);
  nvmlReturn_t (*linkState)(nvmlDevice_t, unsigned, int*);
  nvmlReturn_t (*remotePci)(nvmlDevice_t, unsigned, nvmlPciInfo_t*);
};

template <class F>
bool sym(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(::dlsym(lib, name));
  return *out != nullptr;
}

}  // namespace

std::vector<NvmlGpu> nvmlGpus(std::string* why) {
  std::vector<NvmlGpu> gpus;
  auto say = [&](const char* w) {
    if (why) *why = w;
    return gpus;
  };
  // Kept loaded for the process lifetime: unloading NVML while the driver holds state is unsafe.
  static void* lib = ::dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return say("libnvidia-ml.so.1 not found");
  Api api{};
  if (!sym(lib, "nvmlInit_v2", &api.init) || !sym(lib, "nvmlShutdown", &api.shutdown) ||
      !sym(lib, "nvmlDeviceGetCount_v2", &api.count) || !sym(lib, "nvmlDeviceGetHandleByIndex_v2", &api.byIndex) ||
      !sym(lib, "nvmlDeviceGetPciInfo_v3", &api.pciInfo) || !sym(lib, "nvmlDeviceGetName", &api.name))
    return say("NVML lacks a needed symbol");
  const bool haveLinks = sym(lib, "nvmlDeviceGetNvLinkState", &api.linkState) &&
                         sym(lib, "nvmlDeviceGetNvLinkRemotePciInfo_v2", &api.remotePci);
  if (api.init() != 0) return say("nvmlInit failed (no driver or no GPU)");
  unsigned n = 0;
  if (api.count(&n) != 0) n = 0;
  for (unsigned i = 0; i < n; ++i) {
    nvmlDevice_t dev = nullptr;
    nvmlPciInfo_t pci{};
    if (api.byIndex(i, &dev) != 0 || api.pciInfo(dev, &pci) != 0) continue;
    NvmlGpu g;
    g.index = static_cast<int>(i);
    g.busid = sysfs::canonicalBusId(pci.busId);
    char name[96] = {};
    if (api.name(dev, name, sizeof name) == 0) g.name = name;
    std::map<std::string, int> peers;
    for (unsigned l = 0; haveLinks && l < kNvmlMaxLinks; ++l) {
      int active = 0;
      nvmlPciInfo_t remote{};
      if (api.linkState(dev, l, &active) != 0 || !active || api.remotePci(dev, l, &remote) != 0) continue;
      ++peers[sysfs::canonicalBusId(remote.busId)];
    }
    g.nvlinkPeers.assign(peers.begin(), peers.end());
    gpus.push_back(std::move(g));
  }
  api.shutdown();
  return say(gpus.empty() ? "NVML reports no GPU" : "ok");
}

}  // namespace atl::topo
