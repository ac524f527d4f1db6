#include "tuning/tuner_plugin.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "base/debug.h"

namespace atl::tuning {
namespace {

// The logger handed to the plugin: NCCL's level and subsystem values equal ours.
void pluginLog(int level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  const auto lvl = static_cast<log::Level>(level);
  if (!log::enabled(lvl, flags) || fmt == nullptr) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  log::write(lvl, flags, file ? file : "tuner-plugin", line, "%s", msg);
}

int funcOf(algo::Coll c) {
  switch (c) {
    case algo::Coll::Broadcast:
      return abi::kFuncBroadcast;
    case algo::Coll::Reduce:
      return abi::kFuncReduce;
    case algo::Coll::AllGather:
      return abi::kFuncAllGather;
    case algo::Coll::ReduceScatter:
      return abi::kFuncReduceScatter;
    case algo::Coll::AllReduce:
      return abi::kFuncAllReduce;
    default:
      return -1;
  }
}

void* openLibrary(const std::string& spec, std::string* tried) {
  for (const std::string& n : TunerPlugin::candidates(spec)) {
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
    const char* err = dlerror();
    *tried += (tried->empty() ? "" : "; ") + std::string(err ? err : n.c_str());
  }
  return nullptr;
}

float rowCost(const float (&row)[abi::kNumProtocols]) {
  float best = -1;
  for (float v : row)
    if (v >= 0 && (best < 0 || v < best)) best = v;
  return best;
}

}  // namespace

std::vector<std::string> TunerPlugin::candidates(const std::string& spec) {
  std::vector<std::string> names;
  if (spec.find('/') == std::string::npos) names.push_back("libnccl-tuner-" + spec + ".so");
  names.push_back(spec);
  return names;
}

std::unique_ptr<TunerPlugin> TunerPlugin::load(const std::string& spec, size_t nRanks, size_t nNodes) {
  if (spec.empty() || spec == "none") return nullptr;
  std::string tried;
  void* handle = openLibrary(spec, &tried);
  if (!handle) {
    ATOLL_WARN("NCCL_TUNER_PLUGIN=%s: cannot load (%s); continuing without a tuner plugin", spec.c_str(),
               tried.c_str());
    return nullptr;
  }
  std::unique_ptr<TunerPlugin> p(new TunerPlugin());
  p->handle_ = handle;
  p->v4_ = static_cast<const abi::TunerV4*>(dlsym(handle, abi::kSymbolV4));
  if (!p->v4_) p->v3_ = static_cast<const abi::TunerV3*>(dlsym(handle, abi::kSymbolV3));
  if (!p->v4_ && !p->v3_) {
    ATOLL_WARN("NCCL_TUNER_PLUGIN=%s: neither %s nor %s found; continuing without a tuner plugin", spec.c_str(),
               abi::kSymbolV4, abi::kSymbolV3);
    return nullptr;  // the destructor closes the library
  }
  const char* name = p->v4_ ? p->v4_->name : p->v3_->name;
  p->name_ = name ? name : spec;
  auto init = p->v4_ ? p->v4_->init : p->v3_->init;
  if (!init || !(p->v4_ ? p->v4_->getCollInfo != nullptr : p->v3_->getCollInfo != nullptr)) {
    ATOLL_WARN("NCCL_TUNER_PLUGIN=%s: plugin '%s' lacks init or getCollInfo; continuing without it", spec.c_str(),
               p->name_.c_str());
    return nullptr;
  }
  ncclResult_t rc = init(nRanks, nNodes, pluginLog, &p->context_);
  if (rc != ncclSuccess) {
    ATOLL_WARN("NCCL_TUNER_PLUGIN=%s: plugin '%s' init failed (%d); continuing without it", spec.c_str(),
               p->name_.c_str(), static_cast<int>(rc));
    return nullptr;
  }
  p->initialised_ = true;
  ATOLL_INFO(log::kTune, "Loaded tuner plugin '%s' (v%d) from %s", p->name_.c_str(), p->version(), spec.c_str());
  return p;
}

TunerPlugin::~TunerPlugin() {
  auto destroy = v4_ ? v4_->destroy : v3_ ? v3_->destroy : nullptr;
  if (initialised_ && destroy) (void)destroy(context_);
  if (handle_) dlclose(handle_);
}

bool TunerPlugin::adjust(algo::Coll c, size_t bytes, double ringUs, double treeUs, int nchannels, Verdict* out) {
  const int func = funcOf(c);
  if (func < 0) return false;
  float table[abi::kNumAlgorithms][abi::kNumProtocols];
  for (auto& row : table)
    for (float& v : row) v = abi::kIgnore;
  auto cell = [](double us) { return std::isfinite(us) ? static_cast<float>(us) : abi::kIgnore; };
  table[abi::kAlgoRing][abi::kProtoSimple] = cell(ringUs);
  table[abi::kAlgoTree][abi::kProtoSimple] = cell(treeUs);
  const float ringIn = table[abi::kAlgoRing][abi::kProtoSimple];
  const float treeIn = table[abi::kAlgoTree][abi::kProtoSimple];
  int nch = nchannels;
  // NCCL passes the float[algo][proto] array itself, cast to float**.
  auto* costs = reinterpret_cast<float**>(table);
  ncclResult_t rc;
  {
    std::lock_guard<std::mutex> lock(mu_);
    rc = v4_ ? v4_->getCollInfo(context_, func, bytes, 1, costs, abi::kNumAlgorithms, abi::kNumProtocols, 0, &nch)
             : v3_->getCollInfo(context_, func, bytes, 1, costs, abi::kNumAlgorithms, abi::kNumProtocols, &nch);
    if (rc != ncclSuccess && !warnedFailure_) {
      warnedFailure_ = true;
      ATOLL_WARN("Tuner plugin '%s' getCollInfo failed (%d); its answers are ignored", name_.c_str(),
                 static_cast<int>(rc));
    }
  }
  if (rc != ncclSuccess) return false;
  const float ring = rowCost(table[abi::kAlgoRing]);
  const float tree = rowCost(table[abi::kAlgoTree]);
  out->ringUs = ring;
  out->treeUs = tree;
  out->changed = ring != ringIn || tree != treeIn;
  out->nchannels = nch != nchannels ? nch : 0;
  return true;
}

}  // namespace atl::tuning
