#include "tuning/selector.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <set>
#include <utility>

#include "algorithms/tree_shape.h"
#include "base/debug.h"
#include "base/params.h"
#include "tuning/tuner_plugin.h"

namespace atl::tuning {
namespace {

using algo::Algo;
using algo::Coll;

// Why an algorithm is not a candidate, as the tuning table says it.
enum class State : uint8_t { Candidate, NotApplicable, ExcludedByEnv, RemovedByPlugin, AboveHostRdMax };

const char* reasonText(int r) {
  static constexpr const char* kReasons[] = {"cost model", "ATOLL_RD_MAX_BYTES", "ATOLL_HOST_RD_MAX_BYTES",
                                             "tuner plugin", "fallback: NCCL_ALGO leaves nothing applicable",
                                             "single rank"};
  return kReasons[r];
}
enum Reason { kModel, kRdRule, kHostRdRule, kPlugin, kFallback, kSingle };

int sizeClass(size_t bytes) {
  int c = 0;
  while (c < 63 && (size_t{1} << c) < bytes) ++c;
  return c;
}

}  // namespace

struct Selector::Shared {
  std::unique_ptr<TunerPlugin> plugin;
  std::mutex mu;
  std::set<std::pair<int, int>> logged;     // (collective, size class) already tabled
  std::atomic<uint32_t> warnedFallback{0};  // bit per collective
};

struct Selector::Evaluation {
  double est[algo::kNumAlgos];
  double model[algo::kNumAlgos];  // before the plugin re-priced
  State state[algo::kNumAlgos];
  bool priced = false;                 // the plugin changed a cost
  Choice choice;
  Reason reason = kModel;
};

FabricParams FabricParams::defaults() {
  FabricParams f;
  f.model = modelParams();
  f.intra = f.model.shm;
  f.inter = f.model.socket;
  return f;
}

Result<Selector> Selector::create(int nranks, const topo::IslandMap* islands, const FabricParams& fabric,
                                  int maxChannels) {
  if (nranks < 1) return ATOLL_ERROR(ncclInvalidArgument, "selector for %d ranks", nranks);
  Selector s;
  SelectInput& in = s.base_;
  in.nranks = nranks;
  in.nIslands = 1;
  in.minIslandSize = in.maxIslandSize = nranks;
  if (islands && !islands->members.empty()) {
    in.nIslands = static_cast<int>(islands->members.size());
    in.minIslandSize = nranks;
    in.maxIslandSize = 0;
    for (const auto& m : islands->members) {
      in.minIslandSize = std::min(in.minIslandSize, static_cast<int>(m.size()));
      in.maxIslandSize = std::max(in.maxIslandSize, static_cast<int>(m.size()));
    }
  }
  in.intraBwGBs = fabric.intra.bwGBs;
  in.intraLatUs = fabric.intra.latUs;
  in.interBwGBs = fabric.inter.bwGBs;
  in.interLatUs = fabric.inter.latUs;
  in.stepOverheadUs = fabric.model.stepOverheadUs;
  in.interSharers = std::max(1.0, fabric.interSharers);
  in.intraSharers = std::max(1.0, fabric.intraSharers);
  in.islandHosts = std::max(1, fabric.islandHosts);
  in.hostRanks = std::max(1, fabric.hostRanks);
  in.hostBwGBs = fabric.host.bwGBs;
  in.hostLatUs = fabric.host.latUs;
  in.groups = std::max(1, fabric.groups);
  in.groupBwGBs = fabric.group.bwGBs;
  in.groupLatUs = fabric.group.latUs;
  in.treeBwPenalty = fabric.model.treeBwPenalty;
  in.rhdBwPenalty = fabric.model.rhdBwPenalty;
  in.rdBwPenalty = fabric.model.rdBwPenalty;
  in.maxChannels = std::max(1, maxChannels);
  in.chunkBytes = static_cast<size_t>(params::getInt(params::Id::ChunkBytes));
  // Links inside islands are NICs where islands span hosts.
  if (in.islandHosts > 1)
    in.treeNicLoad = treeNicChunks(nranks, algo::treeCount(nranks, in.maxChannels),
                                   static_cast<int>(std::lround(in.intraSharers)), in.hostRanks);
  s.filter_ = envAlgoFilter();
  // Only Simple exists here, and parseProtoSpec keeps it allowed: read for its warnings, and
  // every Choice says Simple (the cost model prices what the engine does, which is Simple).
  (void)envProtoFilter();
  s.shared_ = std::make_unique<Shared>();
  s.shared_->plugin = TunerPlugin::load(params::getString(params::Id::TunerPlugin), static_cast<size_t>(nranks),
                                        static_cast<size_t>(in.nIslands));
  return s;
}

Selector::Selector(Selector&&) noexcept = default;
Selector& Selector::operator=(Selector&&) noexcept = default;
Selector::~Selector() = default;

bool Selector::hasPlugin() const { return shared_ && shared_->plugin; }

Selector::Evaluation Selector::evaluate(Coll c, size_t bytes) const {
  Evaluation ev;
  SelectInput in = base_;
  in.coll = c;
  in.bytes = bytes;
  for (int i = 0; i < algo::kNumAlgos; ++i) {
    const auto a = static_cast<Algo>(i);
    ev.est[i] = ev.model[i] = estimateUs(a, in);
    ev.state[i] = !applicable(a, in)      ? State::NotApplicable
                  : !filter_.allows(c, a) ? State::ExcludedByEnv
                                          : State::Candidate;
  }
  const size_t perChannel = (bytes + kMinBytesPerChannel - 1) / kMinBytesPerChannel;
  ev.choice.nchannels = static_cast<int>(std::clamp<size_t>(perChannel, 1, static_cast<size_t>(in.maxChannels)));
  if (in.nranks < 2) {
    ev.choice = {Algo::Ring, 1, 0};
    ev.reason = kSingle;
    return ev;
  }

  const int ring = static_cast<int>(Algo::Ring), tree = static_cast<int>(Algo::Tree);
  if (hasPlugin()) {
    TunerPlugin::Verdict v;
    if (shared_->plugin->adjust(c, bytes, ev.est[ring], ev.est[tree], ev.choice.nchannels, &v)) {
      ev.priced = v.changed;
      if (v.changed) {
        for (auto [i, us] : {std::pair{ring, v.ringUs}, std::pair{tree, v.treeUs}}) {
          if (us < 0 && ev.state[i] == State::Candidate) ev.state[i] = State::RemovedByPlugin;
          if (us >= 0) ev.est[i] = us;
        }
      }
      if (v.nchannels >= 1 && v.nchannels <= in.maxChannels) ev.choice.nchannels = v.nchannels;
    }
  }

  // ATOLL_RD_MAX_BYTES was measured on one host; across islands, hierarchical (which did not exist
  // then) beats rd well below it, so there the model decides. On an island inside one host,
  // ATOLL_HOST_RD_MAX_BYTES splits the all-reduce in two: rd up to it, and above it the algorithms
  // that fold each byte once (ring, rhd, tree) as the model prices them. rd and direct fold the
  // whole buffer at every step, which on shared memory costs as much as the copy and which the
  // model's bandwidth terms do not see: at np=2 rd took 34-45 us at 256 KiB and direct 46-48, rhd
  // 24-25, while the model priced the three within 8% of each other. Between hosts the wire
  // hides the fold and rd's log2 n steps pay further up (atoll-sim, 128 ranks over one IB leaf:
  // without rd, the pick at 64 KiB took 1.47x the best time).
  const int rd = static_cast<int>(Algo::RecursiveDoubling), direct = static_cast<int>(Algo::Direct);
  if (!ev.priced && c == Coll::AllReduce && in.nIslands == 1 && ev.state[rd] == State::Candidate) {
    const bool oneHost = in.islandHosts <= 1;
    if (bytes <= static_cast<uint64_t>(params::getInt(oneHost ? params::Id::HostRdMaxBytes : params::Id::RdMaxBytes))) {
      ev.choice.algo = Algo::RecursiveDoubling;
      ev.choice.estUs = ev.est[rd];
      ev.reason = oneHost ? kHostRdRule : kRdRule;
      return ev;
    }
    if (oneHost) {
      bool folding = false;  // an algorithm that folds each byte once is left to choose
      for (int i = 0; i < algo::kNumAlgos; ++i) folding |= i != rd && i != direct && ev.state[i] == State::Candidate;
      for (int i : {rd, direct})  // without `folding`, NCCL_ALGO=rd still gets rd
        if (folding && ev.state[i] == State::Candidate) ev.state[i] = State::AboveHostRdMax;
    }
  }
  int best = -1;
  for (int i = 0; i < algo::kNumAlgos; ++i)
    if (ev.state[i] == State::Candidate && (best < 0 || ev.est[i] < ev.est[best])) best = i;
  if (best < 0) {
    ev.choice.algo = Algo::Ring;
    ev.choice.estUs = ev.model[ring];
    ev.reason = kFallback;
    const uint32_t bit = 1u << static_cast<int>(c);
    if ((shared_->warnedFallback.fetch_or(bit) & bit) == 0)
      ATOLL_WARN("NCCL_ALGO=\"%s\" leaves no applicable algorithm for %s; using ring",
                 params::getString(params::Id::Algo).c_str(), algo::collName(c));
    return ev;
  }
  ev.choice.algo = static_cast<Algo>(best);
  ev.choice.estUs = ev.est[best];
  ev.reason = ev.priced && (best == ring || best == tree) ? kPlugin : kModel;
  return ev;
}

Choice Selector::choose(Coll c, size_t bytes) const {
  Evaluation ev = evaluate(c, bytes);
  if (log::enabled(log::Level::Info, log::kTune)) {
    bool first;
    {
      std::lock_guard<std::mutex> lock(shared_->mu);
      first = shared_->logged.insert({static_cast<int>(c), sizeClass(bytes)}).second;
    }
    if (first) {
      std::string t = table(c, bytes);
      size_t pos = 0;
      while (pos < t.size()) {
        size_t nl = t.find('\n', pos);
        if (nl == std::string::npos) nl = t.size();
        ATOLL_INFO(log::kTune, "%.*s", static_cast<int>(nl - pos), t.data() + pos);
        pos = nl + 1;
      }
    }
  }
  return ev.choice;
}

std::string Selector::table(Coll c, size_t bytes) const {
  Evaluation ev = evaluate(c, bytes);
  std::string out;
  char line[256];
  snprintf(line, sizeof(line),
           "Tuning %s %zu bytes: %d ranks, %d island(s) of %d-%d, up to %d channel(s), uplink shared by %.0f, "
           "island uplink pooled by %d host(s)\n",
           algo::collName(c), bytes, base_.nranks, base_.nIslands, base_.minIslandSize, base_.maxIslandSize,
           base_.maxChannels, base_.interSharers, base_.islandHosts);
  out += line;
  if (base_.groups > 1) {
    snprintf(line, sizeof(line), "  %d Dragonfly+ groups, one direct link between each pair; %.1f GB/s per host inside a group\n",
             base_.groups, base_.groupBwGBs);
    out += line;
  }
  for (int i = 0; i < algo::kNumAlgos; ++i) {
    const auto a = static_cast<Algo>(i);
    const bool chosen = a == ev.choice.algo;
    std::string note;
    if (ev.state[i] == State::NotApplicable) {
      note = "n/a";
    } else {
      snprintf(line, sizeof(line), "%12.2f us", ev.est[i]);
      note = line;
      if (ev.est[i] != ev.model[i]) {
        snprintf(line, sizeof(line), " (plugin; model %.2f)", ev.model[i]);
        note += line;
      }
      if (ev.state[i] == State::ExcludedByEnv) note += " excluded by NCCL_ALGO";
      if (ev.state[i] == State::RemovedByPlugin) note += " removed by the tuner plugin";
      if (ev.state[i] == State::AboveHostRdMax) note += " above ATOLL_HOST_RD_MAX_BYTES";
    }
    if (chosen) {
      snprintf(line, sizeof(line), "  <- chosen (%s), %d channel(s), proto %s", reasonText(ev.reason),
               ev.choice.nchannels, protoName(ev.choice.proto));
      note += line;
    }
    snprintf(line, sizeof(line), "  %-13s %s\n", algo::algoName(a), note.c_str());
    out += line;
  }
  return out;
}

std::string Selector::sweep(Coll c, size_t minBytes, size_t maxBytes) const {
  std::string out = "bytes     ";
  char cell[64];
  for (int i = 0; i < algo::kNumAlgos; ++i) {
    snprintf(cell, sizeof(cell), " %12s", algo::algoName(static_cast<Algo>(i)));
    out += cell;
  }
  out += "  choice\n";
  for (size_t b = std::max<size_t>(1, minBytes); b <= maxBytes; b *= 2) {
    Evaluation ev = evaluate(c, b);
    snprintf(cell, sizeof(cell), "%-10zu", b);
    out += cell;
    for (int i = 0; i < algo::kNumAlgos; ++i) {
      if (ev.state[i] == State::NotApplicable)
        snprintf(cell, sizeof(cell), " %12s", "-");
      else
        snprintf(cell, sizeof(cell), " %12.2f", ev.est[i]);
      out += cell;
    }
    snprintf(cell, sizeof(cell), "  %s/%d\n", algo::algoName(ev.choice.algo), ev.choice.nchannels);
    out += cell;
    if (b > maxBytes / 2) break;  // no overflow on the last doubling
  }
  return out;
}

}  // namespace atl::tuning
