#include "core/net_placement.h"

#include "core/comm_topology.h"
#include "topology/sysfs.h"
#include "transports/net/net_plugin.h"

namespace atl {

std::vector<topo::NetDeviceDesc> netDeviceDescs(const net::PluginNet& net) {
  std::vector<topo::NetDeviceDesc> out;
  for (const net::DeviceProps& p : net.devices())
    out.push_back(topo::NetDeviceDesc{p.name, p.pciPath, static_cast<double>(p.speedMbps), p.latencyUs, p.ptrSupport});
  return out;
}

NetPlacement placeOnNet(const net::PluginNet& net, int cudaDev, int spread) {
  NetPlacement p;
  if (const topo::Graph* local = localGraph()) p.graph = *local;
  const std::vector<topo::NetDeviceDesc> devices = netDeviceDescs(net);
  p.netNodes = topo::addNetDevices(&p.graph, devices);
  p.anchor = topo::rankAnchor(p.graph, cudaDev, topo::sysfs::numaOfThisThread());
  // Without a detected graph (detection failed) every device is equally far: spread alone decides.
  p.choice = topo::nearestNetDevice(p.graph, p.anchor, p.netNodes, spread);
  return p;
}

}  // namespace atl
