// Which device of the chosen net a rank uses: the net's devices join the local topology graph as
// NET nodes (topology/net_nodes.h) and the rank takes the one nearest its GPU, or its CPU for host
// buffers, as NCCL picks a NIC per GPU. The same graph then gives the rank's descriptor, so the cost
// model counts the devices a host's ranks share.
#pragma once

#include <vector>

#include "topology/graph.h"
#include "topology/net_nodes.h"

namespace atl {
namespace net {
class PluginNet;
}

struct NetPlacement {
  topo::Graph graph;           // this host's graph with the net's devices added
  std::vector<int> netNodes;   // their nodes, by device index
  int anchor = -1;             // the node the rank's traffic starts from
  topo::NetChoice choice;      // the device chosen and the path to it
};

/// The devices `net` reports, as the graph takes them.
std::vector<topo::NetDeviceDesc> netDeviceDescs(const net::PluginNet& net);
/// Places a rank on `net` (which has at least one device). `cudaDev` < 0: the rank's buffers are
/// in host memory. `spread` chooses among equally near devices (the rank's device index).
NetPlacement placeOnNet(const net::PluginNet& net, int cudaDev, int spread);

}  // namespace atl
