// Hosting NCCL network plugins (aws-ofi-nccl, nccl-rdma-sharp-plugins, nccl-fastsocket, ...):
// finding them by NCCL's rules, loading whichever ABI version (v6..v12, net_abi.h) a .so exports,
// and one interface over all versions, so the rest of Atoll never sees a version number.
//
// Search (as NCCL 2.28): NCCL_NET_PLUGIN is a comma list; "none" disables external plugins; each
// entry is first dlopen()ed as given (RTLD_NOW | RTLD_LOCAL, so an absolute path works), then as
// libnccl-net-<entry>.so; unset, libnccl-net.so is tried. In each library the newest exported
// ncclNetPlugin_v<N> wins. A plugin whose init fails or that reports no device is skipped with one
// INFO line. NCCL_NET then picks a net by its name, case-insensitively.
//
// Plugin behaviour the interface absorbs: function pointers are read through the exported struct
// on every call, never copied (some plugins rewrite the struct in init); connect/accept return
// success with a null comm until the link is made; isend/irecv may return a null request (try
// again); test may leave sizes unset (they read -1 then); sizes above INT_MAX are refused for the
// versions whose sizes are int. v11+ plugins are initialised with a context, finalised on unload.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace atl::net {

/// One device of a plugin, from any version's properties (fields a version lacks keep defaults).
struct DeviceProps {
  std::string name;
  std::string pciPath;
  uint64_t guid = 0;
  int ptrSupport = 0;  // abi::kPtrHost | kPtrCuda | kPtrDmaBuf
  bool regIsGlobal = false;
  bool forceFlush = false;
  int speedMbps = 0;
  int port = 0;
  float latencyUs = 0;
  int maxComms = 0;
  int maxRecvs = 1;        // receives one irecv may group
  size_t maxP2pBytes = 0;  // largest single transfer
  int railId = -1;         // v12
  int planeId = -1;        // v12
};

class PluginNet {
 public:
  ~PluginNet();
  PluginNet(const PluginNet&) = delete;
  PluginNet& operator=(const PluginNet&) = delete;

  /// The plugin's own name (what NCCL_NET matches), the library it came from, its ABI version.
  const std::string& name() const { return name_; }
  const std::string& library() const { return library_; }
  int version() const { return version_; }
  /// One of Atoll's own nets that the host loads by itself (the UCX net): picked only by name.
  bool builtin() const { return builtin_; }
  const std::vector<DeviceProps>& devices() const { return devices_; }

  /// Writes at most abi::kHandleMaxSize bytes to `handle`, for the peer's connect().
  Status listen(int dev, void* handle, void** listenComm);
  /// Never blocks: *sendComm (and *recvComm) stay null until the link is made; call again.
  Status connect(int dev, void* handle, void** sendComm);
  Status accept(void* listenComm, void** recvComm);
  Status regMr(void* comm, void* data, size_t size, int type, void** mhandle);
  Status deregMr(void* comm, void* mhandle);
  /// *request null: the plugin cannot take it now; call again later.
  Status isend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request);
  /// Up to devices()[dev].maxRecvs buffers in one grouped receive.
  Status irecv(void* recvComm, int n, void** data, const size_t* sizes, const int* tags, void** mhandles,
               void** request);
  /// `sizes` (one per buffer of the request, may be null) read -1 where the plugin left them unset.
  Status test(void* request, int n, int* done, int* sizes);
  Status closeSend(void* sendComm);
  Status closeRecv(void* recvComm);
  Status closeListen(void* listenComm);

 private:
  friend struct Loader;
  PluginNet() = default;
  template <class F>
  ncclResult_t visit(F&& f);
  Status check(ncclResult_t r, const char* what) const;

  std::string name_;
  std::string library_;
  int version_ = 0;
  bool builtin_ = false;
  const void* table_ = nullptr;  // the library's ncclNetPlugin_v<version_>
  void* ctx_ = nullptr;          // v11+: the context init returned
  std::vector<DeviceProps> devices_;
};

/// Every plugin the search found usable, and one line per library tried (atoll-info --net).
struct LoadResult {
  std::vector<std::unique_ptr<PluginNet>> nets;
  std::vector<std::string> tried;
};

/// Runs the search for `pluginList` (NCCL_NET_PLUGIN's value; empty = unset).
LoadResult loadPlugins(const std::string& pluginList);
/// loadPlugins, then Atoll's own net named `own` ("UCX", "IB", "*" for both, or none), from its
/// plugin (libnccl-net-atoll-ucx.so, -ib.so) beside this library, in the build tree, or on the
/// loader's path: plugins, so that UCX and libibverbs load only into processes that use them.
LoadResult loadNets(const std::string& pluginList, const std::string& own);
/// loadNets for NCCL_NET_PLUGIN, run by the first caller in the process (what communicators use);
/// Atoll's own nets only when NCCL_NET names one.
const LoadResult& processNets();
/// The net named `want` (case-insensitive), or the first plugin (not built-in) when `want` is
/// empty; null if none.
PluginNet* pickNet(const LoadResult& loaded, const std::string& want);

}  // namespace atl::net
