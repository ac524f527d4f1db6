#include "transports/net/net_plugin.h"

#include <dlfcn.h>
#include <strings.h>

#include <climits>
#include <cstdarg>
#include <cstdio>
#include <type_traits>

#include "base/debug.h"
#include "base/params.h"
#include "transports/net/net_abi.h"

namespace atl::net {
namespace {

template <class N>
inline constexpr int kVersion = std::is_same_v<N, abi::Net6>    ? 6
                                : std::is_same_v<N, abi::Net7>  ? 7
                                : std::is_same_v<N, abi::Net8>  ? 8
                                : std::is_same_v<N, abi::Net9>  ? 9
                                : std::is_same_v<N, abi::Net10> ? 10
                                : std::is_same_v<N, abi::Net11> ? 11
                                                                : 12;

/// Plugins log through NCCL's logger signature; their lines join ours under NCCL_DEBUG_SUBSYS=NET.
void pluginLogger(abi::LogLevel level, unsigned long /*flags*/, const char* file, int line, const char* fmt, ...) {
  const int lv = level < abi::kLogNone || level > abi::kLogTrace ? abi::kLogInfo : level;
  const auto ours = static_cast<log::Level>(lv);
  if (!log::enabled(ours, log::kNet)) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  log::write(ours, log::kNet, file != nullptr ? file : "net-plugin", line, "%s", msg);
}

/// v10+ plugins report profiler events through this; Atoll has no profiler plugin to forward to.
ncclResult_t noProfiler(void** eHandle, int /*type*/, void* /*pHandle*/, int64_t /*pluginId*/, void* /*extData*/) {
  if (eHandle != nullptr) *eHandle = nullptr;
  return ncclSuccess;
}

template <class P>
DeviceProps convert(const P& p) {
  DeviceProps d;
  d.name = p.name != nullptr ? p.name : "";
  d.pciPath = p.pciPath != nullptr ? p.pciPath : "";
  d.guid = p.guid;
  d.ptrSupport = p.ptrSupport;
  d.speedMbps = p.speed;
  d.port = p.port;
  d.latencyUs = p.latency;
  d.maxComms = p.maxComms;
  d.maxRecvs = p.maxRecvs > 0 ? p.maxRecvs : 1;
  d.maxP2pBytes = INT_MAX;  // versions before 9 count bytes in an int
  if constexpr (requires { p.regIsGlobal; }) d.regIsGlobal = p.regIsGlobal != 0;
  if constexpr (requires { p.forceFlush; }) d.forceFlush = p.forceFlush != 0;
  if constexpr (requires { p.maxP2pBytes; }) d.maxP2pBytes = p.maxP2pBytes;
  if constexpr (requires { p.railId; }) {
    d.railId = p.railId;
    d.planeId = p.planeId;
  }
  return d;
}

bool fitsInt(size_t n) { return n <= static_cast<size_t>(INT_MAX); }

}  // namespace

template <class F>
ncclResult_t PluginNet::visit(F&& f) {
  clearLastError();  // so check() can tell what a built-in net (sharing our error slot) said
  switch (version_) {
    case 6: return f(*static_cast<const abi::Net6*>(table_));
    case 7: return f(*static_cast<const abi::Net7*>(table_));
    case 8: return f(*static_cast<const abi::Net8*>(table_));
    case 9: return f(*static_cast<const abi::Net9*>(table_));
    case 10: return f(*static_cast<const abi::Net10*>(table_));
    case 11: return f(*static_cast<const abi::Net11*>(table_));
    case 12: return f(*static_cast<const abi::Net12*>(table_));
    default: return ncclInternalError;
  }
}

Status PluginNet::check(ncclResult_t r, const char* what) const {
  if (r == ncclSuccess) return Status::Ok();
  // A net built into Atoll left its reason in this thread's error slot; a plugin logged its own.
  const std::string said = lastErrorMessage();
  char msg[1024];
  std::snprintf(msg, sizeof(msg), "net plugin %s (%s, v%d): %s failed: %s%s%s", name_.c_str(), library_.c_str(), version_,
                what, ncclGetErrorString(r), said.empty() ? "" : ": ", said.c_str());
  if (r == ncclRemoteError) {
    // The peer is gone, which is how links end too: the transport raises it where a call waits
    // on that peer.
    ATOLL_INFO(log::kNet, "%s", msg);
    restoreLastError(msg);
    return Status(r);
  }
  return ATOLL_ERROR(r, "%s", msg);
}

PluginNet::~PluginNet() {
  if (ctx_ != nullptr)
    (void)visit([&](const auto& n) -> ncclResult_t {
      if constexpr (kVersion<std::decay_t<decltype(n)>> >= 11) return n.finalize != nullptr ? n.finalize(ctx_) : ncclSuccess;
      return ncclSuccess;
    });
  // Never dlclose()d, as NCCL: plugins start threads and register atexit handlers that would then
  // point into unmapped code.
}

Status PluginNet::listen(int dev, void* handle, void** listenComm) {
  return check(visit([&](const auto& n) -> ncclResult_t {
                 if constexpr (kVersion<std::decay_t<decltype(n)>> >= 11) return n.listen(ctx_, dev, handle, listenComm);
                 else return n.listen(dev, handle, listenComm);
               }),
               "listen");
}

Status PluginNet::connect(int dev, void* handle, void** sendComm) {
  *sendComm = nullptr;
  return check(visit([&](const auto& n) -> ncclResult_t {
                 using N = std::decay_t<decltype(n)>;
                 abi::DeviceHandle* offload = nullptr;  // no device offload requested
                 if constexpr (kVersion<N> == 6) return n.connect(dev, handle, sendComm);
                 else if constexpr (kVersion<N> <= 9) return n.connect(dev, handle, sendComm, &offload);
                 else if constexpr (kVersion<N> == 10) {
                   abi::CommConfig config{abi::kTrafficClassUndef};
                   return n.connect(dev, &config, handle, sendComm, &offload);
                 } else return n.connect(ctx_, dev, handle, sendComm, &offload);
               }),
               "connect");
}

Status PluginNet::accept(void* listenComm, void** recvComm) {
  *recvComm = nullptr;
  return check(visit([&](const auto& n) -> ncclResult_t {
                 abi::DeviceHandle* offload = nullptr;
                 if constexpr (kVersion<std::decay_t<decltype(n)>> == 6) return n.accept(listenComm, recvComm);
                 else return n.accept(listenComm, recvComm, &offload);
               }),
               "accept");
}

Status PluginNet::regMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  return check(visit([&](const auto& n) -> ncclResult_t {
                 if constexpr (kVersion<std::decay_t<decltype(n)>> <= 7) {
                   if (!fitsInt(size)) return ncclInvalidArgument;
                   return n.regMr(comm, data, static_cast<int>(size), type, mhandle);
                 } else {
                   return n.regMr(comm, data, size, type, mhandle);
                 }
               }),
               "regMr");
}

Status PluginNet::deregMr(void* comm, void* mhandle) {
  return check(visit([&](const auto& n) -> ncclResult_t { return n.deregMr(comm, mhandle); }), "deregMr");
}

Status PluginNet::isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request) {
  *request = nullptr;
  return check(visit([&](const auto& n) -> ncclResult_t {
                 using N = std::decay_t<decltype(n)>;
                 if constexpr (kVersion<N> <= 8) {
                   if (!fitsInt(size)) return ncclInvalidArgument;
                   return n.isend(sendComm, data, static_cast<int>(size), tag, mhandle, request);
                 } else if constexpr (kVersion<N> == 9) {
                   return n.isend(sendComm, data, size, tag, mhandle, request);
                 } else {
                   return n.isend(sendComm, data, size, tag, mhandle, nullptr, request);
                 }
               }),
               "isend");
}

Status PluginNet::irecv(void* recvComm, int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
                        void** request) {
  *request = nullptr;
  constexpr int kMax = 64;  // no plugin groups more (NCCL_NET_MAX_REQUESTS is 32)
  if (n < 1 || n > kMax) return ATOLL_ERROR(ncclInvalidArgument, "net plugin %s: irecv of %d buffers", name_.c_str(), n);
  int tagCopy[kMax];
  for (int i = 0; i < n; ++i) tagCopy[i] = tags[i];
  return check(visit([&](const auto& net) -> ncclResult_t {
                 using N = std::decay_t<decltype(net)>;
                 if constexpr (kVersion<N> <= 8) {
                   int small[kMax];
                   for (int i = 0; i < n; ++i) {
                     if (!fitsInt(sizes[i])) return ncclInvalidArgument;
                     small[i] = static_cast<int>(sizes[i]);
                   }
                   return net.irecv(recvComm, n, data, small, tagCopy, mhandles, request);
                 } else {
                   size_t big[kMax];
                   for (int i = 0; i < n; ++i) big[i] = sizes[i];
                   if constexpr (kVersion<N> == 9) return net.irecv(recvComm, n, data, big, tagCopy, mhandles, request);
                   else {
                     void* phandles[kMax] = {};
                     return net.irecv(recvComm, n, data, big, tagCopy, mhandles, phandles, request);
                   }
                 }
               }),
               "irecv");
}

Status PluginNet::test(void* request, int n, int* done, int* sizes) {
  if (sizes != nullptr)
    for (int i = 0; i < n; ++i) sizes[i] = -1;
  *done = 0;
  return check(visit([&](const auto& net) -> ncclResult_t { return net.test(request, done, sizes); }), "test");
}

Status PluginNet::closeSend(void* sendComm) {
  return check(visit([&](const auto& n) -> ncclResult_t { return n.closeSend(sendComm); }), "closeSend");
}
Status PluginNet::closeRecv(void* recvComm) {
  return check(visit([&](const auto& n) -> ncclResult_t { return n.closeRecv(recvComm); }), "closeRecv");
}
Status PluginNet::closeListen(void* listenComm) {
  return check(visit([&](const auto& n) -> ncclResult_t { return n.closeListen(listenComm); }), "closeListen");
}

/// The search, with access to PluginNet's insides.
struct Loader {
  LoadResult result;

  void note(const char* fmt, ...) __attribute__((format(printf, 2, 3))) {
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    result.tried.emplace_back(line);
    ATOLL_INFO(log::kNet | log::kInit, "net plugin: %s", line);
  }

  /// dlopen(entry), then libnccl-net-<entry>.so; the name that loaded, or empty.
  void* open(const std::string& entry, std::string* loaded) {
    void* dl = dlopen(entry.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (dl != nullptr) {
      *loaded = entry;
      return dl;
    }
    std::string why = dlerror();
    if (entry.rfind("libnccl-net", 0) == 0 || entry.find('/') != std::string::npos) {
      note("%s: %s", entry.c_str(), why.c_str());
      return nullptr;
    }
    const std::string alt = "libnccl-net-" + entry + ".so";
    dl = dlopen(alt.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (dl == nullptr) {
      note("%s: %s; %s: %s", entry.c_str(), why.c_str(), alt.c_str(), dlerror());
      return nullptr;
    }
    *loaded = alt;
    return dl;
  }

  void load(const std::string& entry) {
    std::string lib;
    void* dl = open(entry, &lib);
    if (dl == nullptr) return;
    std::unique_ptr<PluginNet> net(new PluginNet());
    net->library_ = lib;
    for (int v = 12; v >= 6 && net->table_ == nullptr; --v) {
      const std::string sym = "ncclNetPlugin_v" + std::to_string(v);
      if (const void* t = dlsym(dl, sym.c_str())) {
        net->table_ = t;
        net->version_ = v;
      }
    }
    if (net->table_ == nullptr) {
      note("%s: no ncclNetPlugin_v6 .. v12 symbol", lib.c_str());
      return;  // left loaded: unloading libraries that may have started threads is not safe
    }
    adopt(std::move(net));
  }

  /// Atoll's own plugin library `file` (the UCX net), looked for beside the library or program
  /// this code is in, then where the build made it, then on the loader's path; selected by name only.
  void loadOwn(const std::string& file, const char* built) {
    std::vector<std::string> where;
    Dl_info self{};
    if (dladdr(reinterpret_cast<void*>(&processNets), &self) != 0 && self.dli_fname != nullptr) {
      const std::string me = self.dli_fname;
      const size_t slash = me.rfind('/');
      if (slash != std::string::npos) where.push_back(me.substr(0, slash + 1) + file);
    }
    if (built != nullptr) where.emplace_back(built);
    where.push_back(file);
    for (const std::string& path : where) {
      void* dl = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (dl == nullptr) continue;
      std::unique_ptr<PluginNet> net(new PluginNet());
      net->library_ = path;
      net->table_ = dlsym(dl, "ncclNetPlugin_v11");
      net->version_ = 11;
      net->builtin_ = true;
      if (net->table_ == nullptr) {
        note("%s: no ncclNetPlugin_v11 symbol", path.c_str());
        return;
      }
      adopt(std::move(net));
      return;
    }
    note("%s: not found beside %s, in the build tree or on the loader's path", file.c_str(),
         self.dli_fname != nullptr ? self.dli_fname : "this library");
  }

  void adopt(std::unique_ptr<PluginNet> net) {
    const std::string& lib = net->library_;
    const char* declared = *static_cast<const char* const*>(net->table_);  // `name` comes first in every version
    net->name_ = declared != nullptr ? declared : "(unnamed)";
    // init, then the name again: a plugin may rewrite its struct (and name) in init.
    ncclResult_t r = net->visit([&](const auto& n) -> ncclResult_t {
      using N = std::decay_t<decltype(n)>;
      if constexpr (kVersion<N> <= 9) return n.init(pluginLogger);
      else if constexpr (kVersion<N> == 10) return n.init(pluginLogger, noProfiler);
      else {
        abi::CommConfig config{abi::kTrafficClassUndef};
        return n.init(&net->ctx_, 0, &config, pluginLogger, noProfiler);
      }
    });
    if (r != ncclSuccess) {
      net->ctx_ = nullptr;
      note("%s: %s (v%d) init failed (%s), skipped", lib.c_str(), net->name_.c_str(), net->version_, ncclGetErrorString(r));
      return;
    }
    declared = *static_cast<const char* const*>(net->table_);
    if (declared != nullptr) net->name_ = declared;
    int ndev = 0;
    r = net->visit([&](const auto& n) -> ncclResult_t { return n.devices(&ndev); });
    if (r != ncclSuccess || ndev <= 0) {
      note("%s: %s (v%d) reports %s, skipped", lib.c_str(), net->name_.c_str(), net->version_,
           r != ncclSuccess ? ncclGetErrorString(r) : "no device");
      return;
    }
    for (int d = 0; d < ndev; ++d) {
      DeviceProps props;
      r = net->visit([&](const auto& n) -> ncclResult_t { return getProps(n, d, &props); });
      if (r != ncclSuccess) {
        note("%s: %s getProperties(%d) failed (%s), skipped", lib.c_str(), net->name_.c_str(), d, ncclGetErrorString(r));
        return;
      }
      net->devices_.push_back(std::move(props));
    }
    note("%s: %s (ncclNetPlugin_v%d), %d device(s)", lib.c_str(), net->name_.c_str(), net->version_, ndev);
    result.nets.push_back(std::move(net));
  }

  template <class N>
  static ncclResult_t getProps(const N& n, int dev, DeviceProps* out) {
    using P = std::remove_pointer_t<typename ArgOf<decltype(N::getProperties)>::type>;
    P p{};
    const ncclResult_t r = n.getProperties(dev, &p);
    if (r == ncclSuccess) *out = convert(p);
    return r;
  }

  template <class Fn>
  struct ArgOf;
  template <class P>
  struct ArgOf<ncclResult_t (*)(int, P)> {
    using type = P;
  };
};

LoadResult loadPlugins(const std::string& pluginList) {
  Loader loader;
  std::vector<std::string> entries;
  size_t start = 0;
  while (start <= pluginList.size()) {
    size_t comma = pluginList.find(',', start);
    if (comma == std::string::npos) comma = pluginList.size();
    std::string e = pluginList.substr(start, comma - start);
    const size_t b = e.find_first_not_of(" \t"), last = e.find_last_not_of(" \t");
    e = b == std::string::npos ? "" : e.substr(b, last - b + 1);
    if (!e.empty()) entries.push_back(e);
    start = comma + 1;
  }
  for (const std::string& e : entries)
    if (strcasecmp(e.c_str(), "none") == 0) {
      loader.note("NCCL_NET_PLUGIN=%s: external plugins disabled", pluginList.c_str());
      return std::move(loader.result);
    }
  if (entries.empty()) entries.push_back("libnccl-net.so");
  for (const std::string& e : entries) loader.load(e);
  return std::move(loader.result);
}

PluginNet* pickNet(const LoadResult& loaded, const std::string& want) {
  for (const auto& n : loaded.nets)
    if ((want.empty() && !n->builtin()) || (!want.empty() && strcasecmp(n->name().c_str(), want.c_str()) == 0))
      return n.get();
  return nullptr;
}

LoadResult loadNets(const std::string& pluginList, const std::string& own) {
  LoadResult r = loadPlugins(pluginList);
#ifdef ATOLL_UCX_PLUGIN_BUILT
  const char* ucxBuilt = ATOLL_UCX_PLUGIN_BUILT;
#else
  const char* ucxBuilt = nullptr;  // a build without UCX: the plugin may still be installed
#endif
#ifdef ATOLL_IB_PLUGIN_BUILT
  const char* ibBuilt = ATOLL_IB_PLUGIN_BUILT;
#else
  const char* ibBuilt = nullptr;
#endif
  const struct {
    const char* name;
    const char* file;
    const char* built;
  } kOwn[] = {{"UCX", "libnccl-net-atoll-ucx.so", ucxBuilt}, {"IB", "libnccl-net-atoll-ib.so", ibBuilt}};
  Loader loader;
  for (const auto& o : kOwn)
    if (own == "*" || strcasecmp(own.c_str(), o.name) == 0) loader.loadOwn(o.file, o.built);
  for (auto& n : loader.result.nets) r.nets.push_back(std::move(n));
  for (auto& t : loader.result.tried) r.tried.push_back(std::move(t));
  return r;
}

const LoadResult& processNets() {
  // Static and never torn down: plugins stay loaded for the process (NCCL never unloads them
  // either, and some are not safe to dlclose), and every communicator shares their instances.
  // Atoll's own nets load only when NCCL_NET names one: UCX and verbs open their devices at init,
  // which a job on the socket transport should not pay for.
  static const LoadResult* loaded =
      new LoadResult(loadNets(params::getString(params::Id::NetPlugin), params::getString(params::Id::Net)));
  return *loaded;
}

}  // namespace atl::net
