// A node's topology as XML, in the spirit of NCCL_TOPO_FILE / NCCL_TOPO_DUMP_FILE:
//   <system version="1">
//     <cpu id="cpu0" numaid="0" ncpus="64" link_bw="40" link_lat="0.1">
//       <numa id="numa0" index="0" .../>
//       <pci busid="0000:17:00.0" link_bw="24" link_lat="0.5">
//         <gpu busid="0000:18:00.0" index="0" name="H100" .../>
//         <nic busid="0000:19:00.0" ...><net name="ib0" speed="400000"/></nic>
//       </pci>
//     </cpu>
//     <nvswitch id="nvs0"/>
//     <link a="gpu:0000:18:00.0" b="nvswitch:nvs0" type="nvlink" bw="450" lat="0.7" count="18"/>
//   </system>
// Tree edges (cpu -> numa/pci/gpu/nic) nest; every other link is a top-level <link>. NCCL's own
// forms are read too, so real dumps and cloud images' NCCL_TOPO_FILEs load (tests/unit/
// topology_fixtures): <pci busid=X><gpu dev=.../></pci> is one GPU at X; a leaf <pci class=..> is a
// GPU (0x03..) or NIC (0x02..); a <nic> without busid under a <cpu> gives one NIC per <net>, named by
// it, on that CPU; <nvlink target=.. count=..> inside a <gpu> is an NVLink (one naming its own GPU is
// dropped); <cpu numaid=N> without id is cpuN, and such CPUs are SMP-linked pairwise unless a <link>
// joins them. Unknown elements and attributes are ignored.
#pragma once

#include <string>

#include "base/status.h"
#include "topology/graph.h"
#include "topology/xml.h"

namespace atl::topo {

XmlElement graphToXml(const Graph& g);
Result<Graph> graphFromXml(const XmlElement& root);

std::string dumpTopology(const Graph& g);
Result<Graph> loadTopology(const std::string& xmlText);

Status writeTopologyFile(const Graph& g, const std::string& path);
Result<Graph> readTopologyFile(const std::string& path);

}  // namespace atl::topo
