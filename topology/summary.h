// Human-readable views of a topology for atoll-info and logs.
#pragma once

#include <string>

#include "topology/detect.h"
#include "topology/graph.h"
#include "topology/islands.h"

namespace atl::topo {

/// Nodes as an indented tree (CPU -> PCI -> devices), then the other links.
std::string summarize(const Graph& g, const DetectInfo* info = nullptr);
/// Path class, bottleneck GB/s and latency between every pair of GPUs, NICs and CPUs.
std::string pathMatrix(const Graph& g);
/// Islands, and the fabric file's level figures when one was given (null: none).
std::string describeIslands(const IslandMap& map, IslandRule rule, const FabricLevels* fromFabricFile);

}  // namespace atl::topo
