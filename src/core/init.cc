// Communicator life cycle: init (rank, config, all, scalable), split, finalize, destroy, abort.
#include "core/init.h"

#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <thread>
#include <vector>

#include "base/debug.h"
#include "base/fd_limit.h"
#include "base/host_id.h"
#include "base/params.h"
#include "core/comm_topology.h"
#include "core/connect.h"
#include "core/device_proxy.h"
#include "core/group.h"
#include "core/net_placement.h"
#include "core/nccl_api.h"
#include "transports/net/net_plugin.h"
#include "transports/net/net_transport.h"

namespace atl {

Result<ncclConfig_t> resolveConfig(const ncclConfig_t* user) {
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  if (user == nullptr) return cfg;
  if (user->magic != 0xcafebeef || user->size < offsetof(ncclConfig_t, commName))
    return ATOLL_ERROR(ncclInvalidArgument, "ncclConfig_t not initialised with NCCL_CONFIG_INITIALIZER (magic 0x%x, size %zu)",
                       user->magic, user->size);
  // Copy only what the caller's (possibly older) struct has.
  std::memcpy(&cfg, user, std::min(user->size, sizeof(cfg)));
  cfg.size = sizeof(cfg);
  if (cfg.blocking != NCCL_CONFIG_UNDEF_INT && cfg.blocking != 0 && cfg.blocking != 1)
    return ATOLL_ERROR(ncclInvalidArgument, "config.blocking must be 0 or 1, got %d", cfg.blocking);
  return cfg;
}

namespace {

// What a rank publishes at the rendezvous starts with this; bump it when the record changes.
constexpr uint32_t kPublishedVersion = 2;

/// The plugin net that carries links to other hosts, or null for the built-in socket transport.
/// As NCCL: NCCL_NET (or config.netName) names a net, case-insensitively, among the plugins that
/// NCCL_NET_PLUGIN's search found and then the built-in "Socket"; unset, the first plugin found
/// wins, else Socket.
Result<net::PluginNet*> selectNet(const ncclConfig_t& cfg) {
  const std::string& env = params::getString(params::Id::Net);
  const std::string want = cfg.netName ? cfg.netName : env;
  const net::LoadResult& loaded = net::processNets();
  if (net::PluginNet* n = net::pickNet(loaded, want)) return n;
  if (want.empty() || strcasecmp(want.c_str(), "Socket") == 0) return static_cast<net::PluginNet*>(nullptr);
  std::string have = "Socket";
  for (const auto& n : loaded.nets) have += ", " + n->name();
  // Say why a net by that name is not among them, when the search met one (no device, init failed).
  std::string seen;
  auto lower = [](std::string t) {
    for (char& ch : t) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return t;
  };
  for (const std::string& line : loaded.tried)
    if (lower(line).find(" " + lower(want) + " (") != std::string::npos) seen += "; " + line;
  return ATOLL_ERROR(ncclInvalidArgument,
                     "network '%s' requested (NCCL_NET / config.netName) but the nets available are: %s "
                     "(NCCL_NET_PLUGIN finds plugins; atoll-info --net lists them)%s",
                     want.c_str(), have.c_str(), seen.c_str());
}

/// A rank's peers must all reach other hosts the same way: a net link needs a net at both ends.
Status checkSameNet(const transport::Context& ctx) {
  const transport::PeerInfo& me = ctx.peers[static_cast<size_t>(ctx.rank)];
  for (const transport::PeerInfo& p : ctx.peers) {
    const bool mine = (me.flags & transport::kPeerHasNet) != 0, theirs = (p.flags & transport::kPeerHasNet) != 0;
    if (mine != theirs || (mine && strcasecmp(me.netName, p.netName) != 0)) {
      auto what = [](bool net, const char* name) {
        return net ? "plugin net '" + std::string(name) + "'" : std::string("the built-in socket transport");
      };
      return ATOLL_ERROR(ncclInvalidUsage,
                         "rank %d uses %s but rank %d uses %s: set NCCL_NET and NCCL_NET_PLUGIN alike on every rank", ctx.rank, what(mine, me.netName).c_str(), p.rank, what(theirs, p.netName).c_str());
    }
  }
  return Status::Ok();
}

int channelCount() {
  int64_t lo = std::max<int64_t>(1, params::getInt(params::Id::MinNChannels));
  int64_t hi = std::max<int64_t>(lo, params::getInt(params::Id::MaxNChannels));
  return static_cast<int>(std::clamp<int64_t>(2, lo, std::min<int64_t>(hi, 64)));
}

}  // namespace

Status initComm(ncclComm* comm, int nranks, std::span<const ncclUniqueId> ids, int rank, const ncclConfig_t& config) {
  log::setThreadRank(rank);
  comm->rank = rank;
  comm->nranks = nranks;
  comm->config = config;
  if (config.commName) comm->name = config.commName;
  ATOLL_ASSIGN_OR_RETURN(net::PluginNet* pluginNet, selectNet(config));
  ATOLL_ASSIGN_OR_RETURN(comm->device, device::select());
  net::raiseFdLimit();  // as NCCL does: links and bootstrap messages each hold a descriptor

  std::string ifname;
  ATOLL_ASSIGN_OR_RETURN(net::SockAddr bindAddr,
                         net::findInterfaceAddress(params::getString(params::Id::SocketIfname), &ifname));
  transport::PeerInfo me;
  me.rank = rank;
  me.pid = getpid();
  me.hostHash = hostHash();
  me.cudaDev = comm->cudaDev;
  me.flags = peerFlags(!params::getBool(params::Id::ShmDisable));
  std::string host = hostName();
  std::strncpy(me.hostname, host.c_str(), sizeof(me.hostname) - 1);
  topo::RankDesc placement;
  if (pluginNet != nullptr) {
    // One device per rank: the nearest to its buffers in the topology graph; ranks of one host
    // spread over equally near devices by their device index.
    const bool gpuBuffers = comm->device->kind() == device::Kind::Cuda;
    const NetPlacement placed = placeOnNet(*pluginNet, gpuBuffers ? comm->cudaDev : -1, std::max(comm->cudaDev, 0));
    const int dev = placed.choice.device;
    ATOLL_INFO(log::kNet, "rank %d: net %s device %d (%s) from %s %s: %s path, %.1f GB/s, %d device(s) as near",
               rank, pluginNet->name().c_str(), dev, pluginNet->devices()[static_cast<size_t>(dev)].name.c_str(),
               placed.anchor >= 0 ? topo::nodeTypeName(placed.graph.node(placed.anchor).type) : "host",
               placed.anchor >= 0 ? placed.graph.node(placed.anchor).id.c_str() : "-",
               topo::pathTypeName(placed.choice.path.type), placed.choice.path.bwGBs, placed.choice.equals);
    ATOLL_ASSIGN_OR_RETURN(comm->links.net, net::createNetTransport(pluginNet, dev, &me));
    comm->links.netDevice = &pluginNet->devices()[static_cast<size_t>(dev)];
    placement = localPlacement(&placed.graph);
  } else {
    placement = localPlacement();
    ATOLL_ASSIGN_OR_RETURN(comm->links.socket, transport::createSocketTransport(bindAddr, &me));
  }
  comm->links.shm = transport::createShmTransport();

  // What every rank publishes at the rendezvous: how to reach it, where it runs, and whether it
  // fingerprints its calls (ATOLL_CHECK: every rank must, or none).
  const uint32_t checkCalls = params::getBool(params::Id::Check) ? 1 : 0;
  codec::Writer published;
  published.u32(kPublishedVersion);
  transport::encodePeerInfo(published, me);
  topo::encodeRankDesc(published, placement);
  published.u32(checkCalls);
  ATOLL_ASSIGN_OR_RETURN(comm->bootstrap,
                         bootstrap::Bootstrap::create(ids, rank, nranks, published.data(), &comm->abortFlag));

  transport::Context& ctx = comm->links.context;
  ctx.rank = rank;
  ctx.nranks = nranks;
  ctx.commHash = comm->bootstrap->commHash();
  ctx.secret = comm->bootstrap->secret();
  ctx.peers.resize(static_cast<size_t>(nranks));
  std::vector<topo::RankDesc> where(static_cast<size_t>(nranks));
  for (int r = 0; r < nranks; ++r) {
    codec::Reader theirs(comm->bootstrap->peerInfo(r));
    const uint32_t version = theirs.u32();
    ctx.peers[static_cast<size_t>(r)] = transport::decodePeerInfo(theirs);
    where[static_cast<size_t>(r)] = topo::decodeRankDesc(theirs);
    const uint32_t theirCheck = theirs.u32();
    if (version != kPublishedVersion || !theirs.finished())
      return ATOLL_ERROR(ncclInternalError,
                         "rank %d published a peer description this build cannot read (version %u, %s; another build?)",
                         r, version, theirs.ok() ? "trailing bytes" : "too short");
    if (theirCheck != checkCalls)
      return ATOLL_ERROR(ncclInvalidUsage, "ATOLL_CHECK is %u on rank %d but %u on rank %d: set it alike on every rank",
                         checkCalls, rank, theirCheck, r);
  }
  ctx.bufferBytes = static_cast<size_t>(std::max<int64_t>(64 << 10, params::getInt(params::Id::BuffSize))) / 8 * 8;
  ctx.shmDirectMinBytes = static_cast<size_t>(std::max<int64_t>(0, params::getInt(params::Id::ShmDirectMin)));
  ctx.shmCmaMinBytes = static_cast<size_t>(std::max<int64_t>(0, params::getInt(params::Id::ShmCmaMin)));
  // Links are made at init or during a call (core/connect.h): a peer that never comes must not
  // hold a call longer than the progress timeout either.
  int64_t setupMs = params::getInt(params::Id::BootstrapTimeoutMs);
  if (const int64_t callMs = params::getInt(params::Id::TimeoutMs); callMs > 0 && (setupMs <= 0 || callMs < setupMs))
    setupMs = callMs;
  ctx.timeoutMs = static_cast<int>(std::clamp<int64_t>(setupMs, 0, 1 << 30));
  ctx.heartbeatMs = static_cast<int>(std::clamp<int64_t>(params::getInt(params::Id::HeartbeatMs), 0, 1 << 30));
  ctx.heartbeatTimeoutMs =
      static_cast<int>(std::clamp<int64_t>(params::getInt(params::Id::HeartbeatTimeoutMs), 1, 1 << 30));
  ctx.abort = &comm->abortFlag;
  ATOLL_CHECK(comm->links.shm->attach(comm->links.contextPtr));
  ATOLL_CHECK(checkSameNet(ctx));
  ATOLL_CHECK(comm->links.remote().attach(comm->links.contextPtr));
  comm->links.nchannels = channelCount();
  ATOLL_CHECK(connectAtInit(comm));
  ATOLL_CHECK(buildCommTopology(comm, where));
  ATOLL_INFO(log::kInit, "comm %p rank %d nranks %d device %s %s %s ready", (void*)comm, rank, nranks,
             comm->device->name(), comm->links.net ? "over" : "interface",
             comm->links.net ? comm->links.net->name() : ifname.c_str());
  return Status::Ok();
}

namespace {

Status validateInitArgs(ncclComm_t* out, int nranks, int rank, const char* fn) {
  if (out == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "%s: comm pointer is NULL", fn);
  if (nranks < 1) return ATOLL_ERROR(ncclInvalidArgument, "%s: nranks %d must be at least 1", fn, nranks);
  if (rank < 0 || rank >= nranks)
    return ATOLL_ERROR(ncclInvalidArgument, "%s: rank %d is out of range [0, %d)", fn, rank, nranks);
  return Status::Ok();
}

/// Allocates and registers the handle now; the rendezvous runs now or at the enclosing ncclGroupEnd.
Status startInit(ncclComm_t* out, int nranks, std::vector<ncclUniqueId> ids, int rank, const ncclConfig_t* userConfig,
                 int cudaDev, const char* fn) {
  ATOLL_CHECK(validateInitArgs(out, nranks, rank, fn));
  for (size_t i = 0; i < ids.size(); ++i)
    if (!bootstrap::isValidUniqueId(ids[i]))
      return ATOLL_ERROR(ncclInvalidArgument, "%s: unique id %zu is not one made by ncclGetUniqueId", fn, i);
  ATOLL_ASSIGN_OR_RETURN(ncclConfig_t config, resolveConfig(userConfig));
  if (cudaDev < 0) {
    // ncclCommInitRank's device is the caller's current one, as in NCCL (the host backend's is 0).
    Result<const device::Device*> dev = device::select();
    cudaDev = dev.ok() ? (*dev)->currentDevice() : 0;
  }
  auto* comm = new ncclComm();
  comm->cudaDev = cudaDev;
  registerComm(comm);
  *out = comm;
  auto job = [comm, nranks, ids = std::move(ids), rank, config]() -> Status {
    Status s = initComm(comm, nranks, ids, rank, config);
    if (!s.ok()) {
      comm->state.store(CommState::Failed);
      comm->asyncError.store(s.code());
      return s;
    }
    comm->state.store(CommState::Ready, std::memory_order_release);
    return s;
  };
  if (config.blocking == 0 && !inGroup()) {
    // Non-blocking: the rendezvous runs on a thread of the communicator's own; the caller polls
    // ncclCommGetAsyncError until it stops answering ncclInProgress.
    comm->initThread = std::thread([job] { (void)job(); });
    return Status(ncclInProgress);
  }
  return enqueueInit(std::move(job));
}

void destroyNow(ncclComm* comm) {
  if (comm->initThread.joinable()) {
    // Still initialising (non-blocking): cut the rendezvous short rather than wait it out.
    if (comm->state.load() == CommState::Initializing) comm->abortFlag.store(true);
    comm->initThread.join();
  }
  unregisterComm(comm);
  delete comm;
}

}  // namespace
}  // namespace atl

using namespace atl;

NCCL_API(ncclResult_t, ncclGetUniqueId, ncclUniqueId* uniqueId) {
  return apiGuard(__func__, [&]() -> Status {
    if (uniqueId == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    ATOLL_ASSIGN_OR_RETURN(*uniqueId, bootstrap::generateUniqueId());
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclCommInitRankConfig, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank,
         ncclConfig_t* config) {
  return apiGuard(__func__, [&] { return startInit(comm, nranks, {commId}, rank, config, -1, "ncclCommInitRankConfig"); });
}

NCCL_API(ncclResult_t, ncclCommInitRank, ncclComm_t* comm, int nranks, ncclUniqueId commId, int rank) {
  return apiGuard(__func__, [&] { return startInit(comm, nranks, {commId}, rank, nullptr, -1, "ncclCommInitRank"); });
}

NCCL_API(ncclResult_t, ncclCommInitRankScalable, ncclComm_t* newcomm, int nranks, int myrank, int nId,
         ncclUniqueId* commIds, ncclConfig_t* config) {
  return apiGuard(__func__, [&]() -> Status {
    if (nId < 1 || commIds == nullptr)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommInitRankScalable: need at least one unique id (nId=%d)", nId);
    if (nranks >= 1 && nId > nranks)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommInitRankScalable: %d unique ids for %d ranks (at most one per rank)",
                         nId, nranks);
    // As in NCCL: each id's root serves one contiguous block of ranks (bootstrap/wire.h).
    return startInit(newcomm, nranks, std::vector<ncclUniqueId>(commIds, commIds + nId), myrank, config, -1,
                     "ncclCommInitRankScalable");
  });
}

NCCL_API(ncclResult_t, ncclCommInitAll, ncclComm_t* comms, int ndev, const int* devlist) {
  return apiGuard(__func__, [&]() -> Status {
    if (comms == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommInitAll: comms is NULL");
    if (ndev < 1) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommInitAll: ndev %d must be at least 1", ndev);
    ATOLL_ASSIGN_OR_RETURN(ncclUniqueId id, bootstrap::generateUniqueId(/*ignoreCommIdEnv=*/true));
    ATOLL_CHECK(groupStart());
    Status first;
    for (int i = 0; i < ndev && first.ok(); ++i)
      first = startInit(&comms[i], ndev, {id}, i, nullptr, devlist ? devlist[i] : i, "ncclCommInitAll");
    Status end = groupEnd();
    if (first.ok()) first = end;
    if (!first.ok())
      for (int i = 0; i < ndev; ++i)
        if (comms[i] && isLiveComm(comms[i])) {
          destroyNow(comms[i]);
          comms[i] = nullptr;
        }
    return first;
  });
}

NCCL_API(ncclResult_t, ncclCommFinalize, ncclComm_t comm) {
  // The host backend completes every call before returning; a device communicator's proxy may
  // still hold queued calls (core/device_proxy.h): flush them, reporting the first that failed.
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkCommUsable(comm, "ncclCommFinalize"));
    return drainDeviceCalls(comm);
  });
}

NCCL_API(ncclResult_t, ncclCommDestroy, ncclComm_t comm) {
  return apiGuard(__func__, [&]() -> Status {
    if (comm == nullptr) return Status::Ok();  // as NCCL: destroying NULL is a no-op
    if (!isLiveComm(comm))
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommDestroy: %p is not a live communicator", (void*)comm);
    (void)drainDeviceCalls(comm);  // queued calls finish first (their errors were reported already)
    if (comm->activeCalls.load() > 0)
      return ATOLL_ERROR(ncclInvalidUsage, "ncclCommDestroy: communicator is still in use by another thread");
    if (comm->state.load() == CommState::Initializing && !comm->initThread.joinable())
      return ATOLL_ERROR(ncclInvalidUsage, "ncclCommDestroy: communicator initialisation is still running");
    destroyNow(comm);
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclCommAbort, ncclComm_t comm) {
  return apiGuard(__func__, [&]() -> Status {
    if (comm == nullptr) return Status::Ok();
    if (!isLiveComm(comm))
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommAbort: %p is not a live communicator", (void*)comm);
    ATOLL_CHECK(abortActiveCalls(comm, "ncclCommAbort"));
    destroyNow(comm);
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclCommRevoke, ncclComm_t comm, int revokeFlags) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkComm(comm, "ncclCommRevoke"));
    if (revokeFlags != NCCL_REVOKE_DEFAULT)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommRevoke: revokeFlags must be NCCL_REVOKE_DEFAULT (0), got %d",
                         revokeFlags);
    RevokeState live = RevokeState::Live;
    if (!comm->revoke.compare_exchange_strong(live, RevokeState::Revoking)) return Status::Ok();  // already
    // Stop what other threads run on it (a peer may be dead or never come); they return an error
    // and break their links, so peers still inside a collective with this rank fail fast too.
    ATOLL_CHECK(abortActiveCalls(comm, "ncclCommRevoke"));
    // Quiescent. The bootstrap must work again for split and shrink; data calls stay refused.
    comm->abortFlag.store(false, std::memory_order_release);
    comm->asyncError.store(ncclSuccess);
    comm->revoke.store(RevokeState::Revoked, std::memory_order_release);
    ATOLL_INFO(log::kInit, "comm %p rank %d revoked", (void*)comm, comm->rank);
    return Status::Ok();
  });
}
