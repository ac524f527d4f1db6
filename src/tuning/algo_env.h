// NCCL_ALGO and NCCL_PROTO in NCCL's syntax: "ring,tree", "^tree", and per-collective sections
// "allreduce:tree,ring;broadcast:ring". Parsing is pure (tests feed strings); the env accessors cache
// the parsed value and log its warnings once per distinct setting.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/schedule.h"

namespace atl::tuning {

inline constexpr int kNumColls = static_cast<int>(algo::Coll::SendRecv) + 1;

/// Which algorithms each collective may use; a bit per algo::Algo.
struct AlgoFilter {
  static constexpr uint32_t kAll = (1u << algo::kNumAlgos) - 1;
  std::array<uint32_t, kNumColls> allowed;
  AlgoFilter() { allowed.fill(kAll); }
  bool allows(algo::Coll c, algo::Algo a) const { return (allowed[static_cast<int>(c)] >> static_cast<int>(a)) & 1u; }
};

/// NCCL's protocols, in NCCL's order. The host engine has one, Simple: a step's data streams
/// through the link's buffer in bounded slices, with the buffer's own read/write counters as the
/// only synchronisation. It has no LL or LL128 path (data words carrying their own flags), so
/// NCCL_PROTO can name them but never gets them (parseProtoSpec).
enum class Proto : uint8_t { LL, LL128, Simple };
inline constexpr int kNumProtos = 3;
/// NCCL's spelling: "LL", "LL128", "Simple".
const char* protoName(Proto p);

/// Which protocols each collective may use; a bit per Proto.
struct ProtoFilter {
  static constexpr uint32_t kAll = (1u << kNumProtos) - 1;
  std::array<uint32_t, kNumColls> allowed;
  ProtoFilter() { allowed.fill(kAll); }
  bool allows(algo::Coll c, Proto p) const { return (allowed[static_cast<int>(c)] >> static_cast<int>(p)) & 1u; }
};

template <class Filter>
struct Parsed {
  Filter filter;                      // everything allowed when !valid
  bool valid = true;                  // false: the whole value is ignored (warnings say why)
  std::vector<std::string> warnings;  // one line each, ready for ATOLL_WARN
};

Parsed<AlgoFilter> parseAlgoSpec(std::string_view spec);
/// Only Simple exists here: a value that leaves it out for some collective warns once and Simple
/// stays allowed there, so a restriction never leaves a collective without a protocol.
Parsed<ProtoFilter> parseProtoSpec(std::string_view spec);

/// NCCL_ALGO / NCCL_PROTO from the parameter registry, parsed once per distinct value.
AlgoFilter envAlgoFilter();
ProtoFilter envProtoFilter();

}  // namespace atl::tuning
