// Islands of a communicator: which ranks share full bandwidth. Every rank contributes a RankDesc
// (exchanged with an allgather at init); every rank then computes the same IslandMap from the same
// descriptors. Precedence: ATOLL_ISLAND_SIZE > ATOLL_ISLAND_ID > ATOLL_FABRIC_FILE > one per host.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <type_traits>

#include "base/status.h"
#include "base/wire_codec.h"
#include "topology/island_map.h"
#include "topology/fabric.h"
#include "topology/graph.h"

namespace atl::topo {

using topo::IslandMap;

/// One rank's view of where it runs; fixed size and trivially copyable so it travels as bytes.
struct RankDesc {
  uint64_t hostHash = 0;
  int32_t islandId = -1;   // ATOLL_ISLAND_ID (-1 unset)
  int32_t islandSize = 0;  // ATOLL_ISLAND_SIZE (0 unset)
  int32_t numaNodes = 0;   // of this rank's host
  int32_t gpus = 0;
  int32_t nics = 0;
  float netGBs = 0;        // fastest NIC, GB/s (0 unknown)
  char hostName[64] = {};  // for ATOLL_FABRIC_FILE lookups; truncated, NUL-terminated
};
static_assert(std::is_trivially_copyable_v<RankDesc>);

/// This process's descriptor: host identity and island parameters, plus counts from `local` if given.
RankDesc localRankDesc(const Graph* local = nullptr);
void setHostName(RankDesc* d, const std::string& name);
/// RankDesc travels in the rendezvous field by field (base/wire_codec.h).
void encodeRankDesc(codec::Writer& w, const RankDesc& d);
RankDesc decodeRankDesc(codec::Reader& r);

/// Which rule decided the islands (for logs and atoll-info).
enum class IslandRule { Size, Id, Fabric, Host };
const char* islandRuleName(IslandRule r);

/// The islands of ranks.size() ranks. `fabric` may be null (no fabric file). An inconsistent
/// ATOLL_ISLAND_SIZE across ranks warns and uses rank 0's value, so all ranks still agree.
Result<IslandMap> buildIslandMap(std::span<const RankDesc> ranks, const Fabric* fabric, IslandRule* rule = nullptr);
/// The same, reading ATOLL_FABRIC_FILE when set (an unreadable or malformed file is an error).
Result<std::shared_ptr<const IslandMap>> islandsFromParams(std::span<const RankDesc> ranks, IslandRule* rule = nullptr);

/// Figures for the cost model: inside one island and between islands.
struct FabricLevels {
  double intraBwGBs = 10.0, intraLatUs = 1.0;   // shm on one host
  double interBwGBs = 1.25, interLatUs = 10.0;  // 10 Gb/s Ethernet-class
  int islandHosts = 1;  // hosts in the island with the fewest (they pool its uplink to the core)
  // Dragonfly+ groups the ranks span (a fabric file with a group level); 1 otherwise. The inter
  // figures are then the global level's, per host, and each group's global bandwidth is split over
  // direct links to every other group, so traffic from one group to one other gets 1/(groups-1)
  // of it. Islands of one group meet at the group level's figures.
  int groups = 1;
  double groupBwGBs = 0, groupLatUs = 0;
};
/// From the fabric levels the islands actually span, else the NICs' speed, else the defaults above.
FabricLevels fabricLevels(std::span<const RankDesc> ranks, const IslandMap& islands, const Fabric* fabric);

/// Everything init needs from the descriptors, reading ATOLL_FABRIC_FILE once.
struct CommPlacement {
  std::shared_ptr<const IslandMap> islands;
  IslandRule rule = IslandRule::Host;
  FabricLevels levels;
  bool fromFabricFile = false;  // ATOLL_FABRIC_FILE gave the levels (else defaults and NIC speeds)
};
Result<CommPlacement> commPlacement(std::span<const RankDesc> ranks);

}  // namespace atl::topo
