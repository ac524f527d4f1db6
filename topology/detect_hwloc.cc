// hwloc backend: NUMA nodes, packages and CPU model from hwloc, NICs from its PCI/OS devices. Built
// as a stub when the build has no hwloc, so callers need no #ifdef.
#include "topology/detect.h"

#ifdef ATOLL_HAVE_HWLOC
#include <hwloc.h>

#include <cstdio>

#include "topology/sysfs.h"
#endif

namespace atl::topo {

#ifdef ATOLL_HAVE_HWLOC

bool haveHwloc() { return true; }

namespace detail {

namespace {
struct Topology {
  hwloc_topology_t t = nullptr;
  ~Topology() {
    if (t) hwloc_topology_destroy(t);
  }
};

std::string busIdOf(hwloc_obj_t o) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", o->attr->pcidev.domain, o->attr->pcidev.bus, o->attr->pcidev.dev,
                o->attr->pcidev.func);
  return buf;
}
}  // namespace

Status detectCpusHwloc(Graph* g, std::vector<PciNic>* nics) {
  Topology topo;
  if (hwloc_topology_init(&topo.t) != 0) return ATOLL_ERROR(ncclSystemError, "hwloc_topology_init failed");
  // The libpciaccess component leaks at load (LeakSanitizer fails every test that detects); hwloc's
  // Linux backend reads the same PCI tree from sysfs without it.
  hwloc_topology_set_components(topo.t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
  hwloc_topology_set_io_types_filter(topo.t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (hwloc_topology_load(topo.t) != 0) return ATOLL_ERROR(ncclSystemError, "hwloc_topology_load failed");

  const int nnuma = hwloc_get_nbobjs_by_type(topo.t, HWLOC_OBJ_NUMANODE);
  for (int i = 0; i < nnuma; ++i) {
    hwloc_obj_t numa = hwloc_get_obj_by_type(topo.t, HWLOC_OBJ_NUMANODE, static_cast<unsigned>(i));
    hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(topo.t, HWLOC_OBJ_PACKAGE, numa);
    if (!pkg && numa->cpuset)
      pkg = hwloc_get_next_obj_covering_cpuset_by_type(topo.t, numa->cpuset, HWLOC_OBJ_PACKAGE, nullptr);
    const char* model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : nullptr;
    const int ncpus = numa->cpuset ? hwloc_bitmap_weight(numa->cpuset) : 0;
    addNumaDomain(g, static_cast<int>(numa->os_index), ncpus, pkg ? static_cast<int>(pkg->os_index) : 0,
                  model ? model : "");
  }
  if (nnuma == 0) return ATOLL_ERROR(ncclSystemError, "hwloc found no NUMA node");

  for (hwloc_obj_t o = hwloc_get_next_pcidev(topo.t, nullptr); o; o = hwloc_get_next_pcidev(topo.t, o)) {
    const unsigned cls = o->attr->pcidev.class_id;
    if (cls != 0x0200 && cls != 0x0207) continue;  // Ethernet, InfiniBand
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(topo.t, o);
    const int numa = anc && anc->nodeset && !hwloc_bitmap_iszero(anc->nodeset) &&
                             hwloc_get_nbobjs_by_type(topo.t, HWLOC_OBJ_NUMANODE) > 0
                         ? hwloc_bitmap_first(anc->nodeset)
                         : -1;
    std::string name;
    for (hwloc_obj_t c = o->io_first_child; c; c = c->next_sibling)
      if (c->type == HWLOC_OBJ_OS_DEVICE && c->name &&
          (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK ||
           (name.empty() && c->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS))) {
        name = c->name;
        if (c->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) break;
      }
    if (name.empty()) continue;
    nics->push_back(PciNic{busIdOf(o), name, numa});
  }
  return Status::Ok();
}

}  // namespace detail

#else

bool haveHwloc() { return false; }

namespace detail {
Status detectCpusHwloc(Graph*, std::vector<PciNic>*) { return ATOLL_ERROR(ncclInternalError, "built without hwloc"); }
}  // namespace detail

#endif

}  // namespace atl::topo
