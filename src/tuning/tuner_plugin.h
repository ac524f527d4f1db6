// NCCL_TUNER_PLUGIN: loads an NCCL tuner plugin (v4, else v3 ABI) and lets it re-price the cost table.
//
// What maps: NCCL_ALGO_TREE <-> Algo::Tree and NCCL_ALGO_RING <-> Algo::Ring, Simple column only
// (the host backend's only protocol). We fill those two cells with our estimates (us) and every
// other cell with NCCL_ALGO_PROTO_IGNORE; after the call, each of the two algorithms costs the
// minimum non-negative value the plugin left in its row (so a plugin preferring RING/LL still means
// ring). A negative value removes the algorithm. Ignored: the CollNet, NVLS and PAT rows, and our
// algorithms NCCL has no row for (rd, rhd, direct, hierarchical) keep their model cost. nChannels is
// honoured when in [1, maxChannels]. Collectives other than the five NCCL tunes are not offered.
// init receives nNodes = the number of islands; numPipeOps is 1 and regBuff 0 (v4).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/schedule.h"
#include "tuning/tuner_abi.h"

namespace atl::tuning {

class TunerPlugin {
 public:
  /// The plugin `spec` names (a path, or a name tried as libnccl-tuner-<name>.so, then as given), or
  /// null after a WARN when it cannot be loaded or initialised; empty or "none" loads nothing quietly.
  static std::unique_ptr<TunerPlugin> load(const std::string& spec, size_t nRanks, size_t nNodes);
  /// The file names dlopen is given for `spec`, in order.
  static std::vector<std::string> candidates(const std::string& spec);
  ~TunerPlugin();
  TunerPlugin(const TunerPlugin&) = delete;
  TunerPlugin& operator=(const TunerPlugin&) = delete;

  const std::string& name() const { return name_; }
  int version() const { return v4_ ? 4 : 3; }

  struct Verdict {
    bool changed = false;           // the plugin altered the tree or ring cost
    double ringUs = 0, treeUs = 0;  // < 0: plugin removed it
    int nchannels = 0;              // 0: no preference
  };
  /// Offers our ring and tree estimates for re-pricing; false when `c` is not tunable or the call fails.
  bool adjust(algo::Coll c, size_t bytes, double ringUs, double treeUs, int nchannels, Verdict* out);

 private:
  TunerPlugin() = default;
  void* handle_ = nullptr;
  const abi::TunerV3* v3_ = nullptr;
  const abi::TunerV4* v4_ = nullptr;
  void* context_ = nullptr;
  bool initialised_ = false;  // destroy only what init set up
  std::string name_;
  std::mutex mu_;  // plugins need not be thread-safe; one communicator's selector may be shared
  bool warnedFailure_ = false;
};

}  // namespace atl::tuning
