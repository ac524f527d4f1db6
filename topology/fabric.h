// The fabric above the hosts, from ATOLL_FABRIC_FILE: which hosts share a leaf switch, which leaves
// form an island (a full-bandwidth pod), which islands form a Dragonfly+ group, and the bandwidth,
// latency and oversubscription of each level. Format: docs/TOPOLOGY.md.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"

namespace atl::topo {

/// Levels, innermost first: two hosts talk at the level of the smallest unit containing both.
enum class Level { Host, Leaf, Island, Group, Global };
inline constexpr int kLevels = 5;
const char* levelName(Level l);

struct LevelSpec {
  bool set = false;
  double bwGBs = 0;    // per host, GB/s
  double latUs = 0;    // one way, microseconds
  double oversub = 1;  // N:1 over-subscription of this level's links
  double effectiveGBs() const { return bwGBs / oversub; }
};

struct FabricHost {
  std::string host, leaf, island, group;
};

struct Fabric {
  std::array<LevelSpec, kLevels> levels{};
  std::vector<FabricHost> hosts;  // in file order

  const LevelSpec& level(Level l) const { return levels[static_cast<size_t>(l)]; }
  /// Looks up by full name, then by the short name (up to the first '.'); nullptr if absent.
  /// Every rank looks up every rank's host, so this is a hash lookup once indexed (O(1), not a scan
  /// of up to a million hosts per rank).
  const FabricHost* findHost(const std::string& name) const;
  /// Indexes `hosts` for findHost; call after changing them (parseFabric does). Hosts added
  /// since the last call are still found, by a scan.
  void buildIndex();

 private:
  std::unordered_map<std::string, uint32_t> byName_;   // full name -> first host with it
  std::unordered_map<std::string, uint32_t> byShort_;  // short name -> first host whose short name it is
  size_t indexed_ = 0;
};

/// Parses the text format; errors (ncclInvalidArgument) name the line.
Result<Fabric> parseFabric(const std::string& text);
Result<Fabric> readFabricFile(const std::string& path);
/// Writes the text format (parseFabric(formatFabric(f)) reproduces f).
std::string formatFabric(const Fabric& f);

}  // namespace atl::topo
