// Shared by the topology tests that build graphs by hand: the names they use, and one node added
// with the fields those graphs set.
#pragma once

#include <string>

#include "topology/graph.h"

namespace topo = atl::topo;
using topo::Graph;
using topo::LinkType;
using topo::NodeType;
using topo::PathType;

namespace atl::topo::test {

inline int add(Graph* g, NodeType t, const std::string& id, int numa = 0, int index = -1) {
  Node n;
  n.type = t;
  n.id = id;
  n.numa = numa;
  n.index = index;
  return g->addNode(n);
}

}  // namespace atl::topo::test
