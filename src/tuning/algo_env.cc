#include "tuning/algo_env.h"

#include <strings.h>

#include <cstring>
#include <mutex>
#include <optional>

#include "base/debug.h"
#include "base/params.h"

namespace atl::tuning {
namespace {

constexpr int kUnavailable = -1;  // a name NCCL knows that this library does not implement

struct Name {
  const char* text;
  int bit;
};

constexpr Name kAlgoNames[] = {
    {"ring", static_cast<int>(algo::Algo::Ring)},
    {"tree", static_cast<int>(algo::Algo::Tree)},
    {"rd", static_cast<int>(algo::Algo::RecursiveDoubling)},
    {"recursivedoubling", static_cast<int>(algo::Algo::RecursiveDoubling)},
    {"rhd", static_cast<int>(algo::Algo::RecursiveHalvingDoubling)},
    {"direct", static_cast<int>(algo::Algo::Direct)},
    {"hierarchical", static_cast<int>(algo::Algo::Hierarchical)},
    {"binomial", static_cast<int>(algo::Algo::Binomial)},
    {"bruck", static_cast<int>(algo::Algo::Bruck)},
    {"collnetdirect", kUnavailable},
    {"collnetchain", kUnavailable},
    {"collnet", kUnavailable},
    {"nvls", kUnavailable},
    {"nvlstree", kUnavailable},
    {"pat", kUnavailable},
};
constexpr const char* kAlgoHelp =
    "valid names: ring, tree, rd, rhd, direct, hierarchical, binomial, bruck (NCCL's CollnetDirect, CollnetChain, NVLS, NVLSTree "
    "and PAT are accepted and ignored)";

constexpr Name kProtoNames[] = {
    {"ll", static_cast<int>(Proto::LL)},
    {"ll128", static_cast<int>(Proto::LL128)},
    {"simple", static_cast<int>(Proto::Simple)},
};
constexpr const char* kProtoHelp = "valid names: LL, LL128, Simple";

constexpr int kIgnoredColl = -1;  // send/recv: NCCL accepts the section, and so do we, but it selects nothing
constexpr Name kCollNames[] = {
    {"allreduce", static_cast<int>(algo::Coll::AllReduce)},
    {"broadcast", static_cast<int>(algo::Coll::Broadcast)},
    {"reduce", static_cast<int>(algo::Coll::Reduce)},
    {"allgather", static_cast<int>(algo::Coll::AllGather)},
    {"reducescatter", static_cast<int>(algo::Coll::ReduceScatter)},
    {"alltoall", static_cast<int>(algo::Coll::AlltoAll)},
    {"gather", static_cast<int>(algo::Coll::Gather)},
    {"scatter", static_cast<int>(algo::Coll::Scatter)},
    {"sendrecv", kIgnoredColl},
    {"send", kIgnoredColl},
    {"recv", kIgnoredColl},
};
constexpr const char* kCollHelp =
    "collectives: allreduce, broadcast, reduce, allgather, reducescatter, alltoall, gather, scatter, sendrecv";

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

template <size_t N>
std::optional<int> lookup(const Name (&table)[N], std::string_view token) {
  for (const Name& n : table)
    if (token.size() == strlen(n.text) && strncasecmp(token.data(), n.text, token.size()) == 0) return n.bit;
  return std::nullopt;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    size_t at = s.find(sep, pos);
    out.push_back(trim(s.substr(pos, at == std::string_view::npos ? std::string_view::npos : at - pos)));
    if (at == std::string_view::npos) return out;
    pos = at + 1;
  }
}

/// One grammar for both variables; `names` maps tokens to bits of the per-collective mask.
template <class Filter, size_t N>
Parsed<Filter> parseSpec(std::string_view spec, const char* var, const Name (&names)[N], const char* help) {
  Parsed<Filter> out;
  auto invalid = [&](const std::string& why) {
    out.valid = false;
    out.filter = Filter();
    out.warnings.assign(1, std::string(var) + "=\"" + std::string(spec) + "\" ignored: " + why + "; " + help +
                               ", optional leading '^' to exclude, per collective as 'allreduce:tree,ring;"
                               "broadcast:ring' (" +
                               kCollHelp + ")");
    return out;
  };
  spec = trim(spec);
  if (spec.empty()) return out;
  for (std::string_view section : split(spec, ';')) {
    if (section.empty()) continue;  // a trailing ';'
    std::vector<int> colls;         // empty: every collective
    bool anyColl = true;
    size_t colon = section.find(':');
    std::string_view list = section;
    if (colon != std::string_view::npos) {
      anyColl = false;
      for (std::string_view c : split(section.substr(0, colon), ',')) {
        std::optional<int> id = lookup(kCollNames, c);
        if (!id) return invalid("unknown collective '" + std::string(c) + "'");
        if (*id != kIgnoredColl) colls.push_back(*id);
      }
      list = trim(section.substr(colon + 1));
    }
    const bool exclude = !list.empty() && list.front() == '^';
    if (exclude) list.remove_prefix(1);
    uint32_t named = 0;
    bool onlyUnavailable = true;
    for (std::string_view token : split(list, ',')) {
      if (token.empty()) return invalid("empty name");
      std::optional<int> bit = lookup(names, token);
      if (!bit) return invalid("unknown name '" + std::string(token) + "'");
      if (*bit == kUnavailable) {
        out.warnings.push_back(std::string(var) + ": '" + std::string(token) +
                               "' is an NCCL algorithm this library does not implement; ignored");
        continue;
      }
      onlyUnavailable = false;
      named |= 1u << *bit;
    }
    const uint32_t mask = exclude ? (Filter::kAll & ~named) : named;
    if (mask == 0) {
      // Honouring it would leave nothing to run; NCCL fails the collective, we keep the defaults.
      out.warnings.push_back(std::string(var) + ": section '" + std::string(section) + "' leaves no " +
                             (onlyUnavailable && !exclude ? "available " : "") + "choice; section ignored");
      continue;
    }
    if (anyColl)
      out.filter.allowed.fill(mask);
    else
      for (int c : colls) out.filter.allowed[c] = mask;
  }
  return out;
}

/// Re-parses only when the value changes, so each distinct setting warns once per process.
template <class Filter>
class EnvCache {
 public:
  Filter get(params::Id id, Parsed<Filter> (*parse)(std::string_view)) {
    const std::string& value = params::getString(id);
    std::lock_guard<std::mutex> lock(mu_);
    if (!cached_ || value != value_) {
      Parsed<Filter> p = parse(value);
      for (const std::string& w : p.warnings) ATOLL_WARN("%s", w.c_str());
      value_ = value;
      cached_ = p.filter;
    }
    return *cached_;
  }

 private:
  std::mutex mu_;
  std::string value_;
  std::optional<Filter> cached_;
};

}  // namespace

const char* protoName(Proto p) {
  switch (p) {
    case Proto::LL: return "LL";
    case Proto::LL128: return "LL128";
    case Proto::Simple: return "Simple";
  }
  return "?";
}

Parsed<AlgoFilter> parseAlgoSpec(std::string_view spec) {
  return parseSpec<AlgoFilter>(spec, "NCCL_ALGO", kAlgoNames, kAlgoHelp);
}

Parsed<ProtoFilter> parseProtoSpec(std::string_view spec) {
  Parsed<ProtoFilter> p = parseSpec<ProtoFilter>(spec, "NCCL_PROTO", kProtoNames, kProtoHelp);
  const uint32_t simple = 1u << static_cast<int>(Proto::Simple);
  bool dropped = false;
  for (uint32_t& m : p.filter.allowed) {
    dropped |= (m & simple) == 0;
    m |= simple;
  }
  if (dropped)
    p.warnings.push_back("NCCL_PROTO=\"" + std::string(spec) +
                         "\": the host backend implements only the Simple protocol; keeping Simple");
  return p;
}

AlgoFilter envAlgoFilter() {
  static EnvCache<AlgoFilter> cache;
  return cache.get(params::Id::Algo, parseAlgoSpec);
}

ProtoFilter envProtoFilter() {
  static EnvCache<ProtoFilter> cache;
  return cache.get(params::Id::Proto, parseProtoSpec);
}

}  // namespace atl::tuning
