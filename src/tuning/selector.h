// Algorithm selection for one communicator: the cost model's estimate per algorithm, restricted by
// NCCL_ALGO and by what applies to the shape, re-priced by an NCCL tuner plugin when one is loaded,
// and the cheapest wins. On one island, ATOLL_RD_MAX_BYTES (ATOLL_HOST_RD_MAX_BYTES on an island
// inside one host) keeps recursive doubling for small power-of-two all-reduces, as before the
// model existed; inside one host it also leaves the model, above it, only the algorithms that
// fold each byte once (not rd, not direct, unless NCCL_ALGO allows nothing else). With several
// islands the model always decides. A plugin that re-prices ring or tree overrides these rules.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "algorithms/schedule.h"
#include "base/status.h"
#include "tuning/algo_env.h"
#include "tuning/cost_model.h"

namespace atl::tuning {

/// The fabric numbers the model needs: topology/ picks the link kinds, the registry their numbers.
struct FabricParams {
  LinkParams intra;  // inside an island
  LinkParams inter;  // between islands
  double interSharers = 1;  // see SelectInput::interSharers
  double intraSharers = 1;  // see SelectInput::intraSharers
  int islandHosts = 1;      // see SelectInput::islandHosts
  int hostRanks = 1;        // see SelectInput::hostRanks
  LinkParams host;          // see SelectInput::hostBwGBs, hostLatUs
  int groups = 1;           // see SelectInput::groups
  LinkParams group;         // see SelectInput::groupBwGBs, groupLatUs
  ModelParams model;
  /// Shared memory inside islands and TCP between them, with the registry's current numbers.
  static FabricParams defaults();
};

struct Choice {
  algo::Algo algo = algo::Algo::Ring;
  int nchannels = 1;
  double estUs = 0;  // the winner's cost (the plugin's figure when the plugin priced it)
  Proto proto = Proto::Simple;  // the one protocol of the host engine, whatever NCCL_PROTO says (algo_env.h)
};

/// Below this many bytes per channel, splitting a message costs more per-step overhead than it saves.
inline constexpr size_t kMinBytesPerChannel = size_t{128} << 10;

class Selector {
 public:
  /// `islands` may be null (one island); `maxChannels` is what the communicator connected
  /// (NCCL_MIN/MAX_NCHANNELS already applied). Reads NCCL_ALGO, NCCL_PROTO and NCCL_TUNER_PLUGIN now.
  static Result<Selector> create(int nranks, const topo::IslandMap* islands, const FabricParams& fabric,
                                 int maxChannels);
  Selector(Selector&&) noexcept;
  Selector& operator=(Selector&&) noexcept;
  ~Selector();

  /// Cheap (a few dozen flops, plus the plugin's call if any); logs the table under
  /// NCCL_DEBUG_SUBSYS=TUNING once per collective and power-of-two size class.
  Choice choose(algo::Coll c, size_t bytes) const;

  /// Every algorithm's estimate, why it is out if it is, and the choice: one line each.
  std::string table(algo::Coll c, size_t bytes) const;
  /// One line per power-of-two size in [minBytes, maxBytes]: estimates and the choice (crossovers).
  std::string sweep(algo::Coll c, size_t minBytes, size_t maxBytes) const;

  const SelectInput& input() const { return base_; }
  bool hasPlugin() const;

 private:
  struct Shared;
  struct Evaluation;
  Selector() = default;
  Evaluation evaluate(algo::Coll c, size_t bytes) const;

  SelectInput base_;
  AlgoFilter filter_;
  std::unique_ptr<Shared> shared_;  // plugin and log-once state, behind a mutex: choose() is const
};

}  // namespace atl::tuning
