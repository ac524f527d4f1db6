#include "core/connect.h"

#include <algorithm>

#include "base/debug.h"
#include "base/params.h"

namespace atl {
namespace {

struct Pending {
  size_t comm = 0;  // index into the batch
  engine::LinkKey key;
  bool shm = false;
  std::unique_ptr<transport::Connector> connector;
  std::unique_ptr<transport::Connection> conn;
};

bool useShm(const CommLinks& links, int self, int peer) {
  // Both ends must make the same choice, so it depends only on data both sides have.
  const transport::PeerInfo& me = links.context.peers[static_cast<size_t>(self)];
  const transport::PeerInfo& other = links.context.peers[static_cast<size_t>(peer)];
  return (me.flags & transport::kPeerAllowsShm) && (other.flags & transport::kPeerAllowsShm) && links.shm->canConnect(me, other);
}

std::vector<engine::LinkKey> everyLink(const ncclComm* comm) {
  std::vector<engine::LinkKey> keys;
  const int n = comm->nranks, r = comm->rank;
  for (int c = 0; c < comm->links.nchannels && n > 1; ++c) {
    if (c <= 1) {  // the double binary tree runs one tree on each; p2p and direct use channel 0
      for (int p = 0; p < n; ++p)
        if (p != r) keys.push_back({c, p});
    } else {
      keys.push_back({c, (r + 1) % n});
      keys.push_back({c, (r + n - 1) % n});
    }
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

}  // namespace

bool eagerLinks() { return !params::getBool(params::Id::RuntimeConnect); }

std::vector<engine::LinkKey> scheduleLinks(const algo::Schedule& schedule) {
  std::vector<engine::LinkKey> keys;
  for (const algo::Program& prog : schedule.programs)
    for (const algo::Step& st : prog.steps) {
      if (st.kind != algo::StepKind::Transfer) continue;
      if (st.sendPeer >= 0) keys.push_back({prog.channel, st.sendPeer});
      if (st.recvPeer >= 0) keys.push_back({prog.channel, st.recvPeer});
    }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::vector<Status> ensureLinks(std::span<ncclComm* const> comms, std::span<const std::vector<engine::LinkKey>> needed) {
  std::vector<Status> result(comms.size());
  std::vector<Pending> pending;
  for (size_t i = 0; i < comms.size(); ++i) {
    ncclComm* comm = comms[i];
    std::vector<engine::LinkKey> keys(needed[i].begin(), needed[i].end());
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    for (const engine::LinkKey& k : keys) {
      if (comm->links.table.has(k)) continue;
      if (k.peer < 0 || k.peer >= comm->nranks || k.peer == comm->rank || k.channel < 0 ||
          (k.channel >= comm->links.nchannels && k.channel != engine::kOneSidedChannel)) {
        result[i] = ATOLL_ERROR(ncclInternalError, "rank %d: a plan needs a link to rank %d on channel %d (of %d)",
                                comm->rank, k.peer, k.channel, comm->links.nchannels);
        break;
      }
      Pending p;
      p.comm = i;
      p.key = k;
      p.shm = useShm(comm->links, comm->rank, k.peer);
      pending.push_back(std::move(p));
    }
  }
  if (pending.empty()) return result;
  auto live = [&](const Pending& p) { return result[p.comm].ok(); };
  // Phase 1: this side's resources (shm: the ring we receive on).
  for (Pending& p : pending) {
    if (!live(p)) continue;
    CommLinks& links = comms[p.comm]->links;
    transport::Transport& t = p.shm ? *links.shm : links.remote();
    auto c = t.prepare(p.key.peer, p.key.channel);
    if (!c.ok()) result[p.comm] = c.status();
    else p.connector = std::move(*c);
  }
  // Phase 2: start every link; never waits for the peer.
  for (Pending& p : pending)
    if (live(p)) {
      Status s = p.connector->connect();
      if (!s.ok()) result[p.comm] = s;
    }
  // Phase 3: accepting ends (the higher rank of a socket pair) first: they wait only for the
  // hello the peer sent in phase 2, while a dialling end waits for the acceptor's answer, which a
  // thread that drives both ranks gives only here.
  auto finish = [&](bool accepting) {
    for (Pending& p : pending) {
      if (!live(p) || p.conn || (comms[p.comm]->rank > p.key.peer) != accepting) continue;
      auto c = p.connector->finish();
      if (!c.ok()) result[p.comm] = c.status();
      else p.conn = std::move(*c);
    }
  };
  finish(true);
  finish(false);
  // Phase 4: the peer holds its end too, so tearing ours down from now on is seen as a break.
  for (Pending& p : pending) {
    if (!live(p)) continue;
    const transport::Context& ctx = comms[p.comm]->links.context;
    Status s = p.conn->settle(Deadline::afterMs(ctx.timeoutMs), ctx.abort);
    if (!s.ok()) result[p.comm] = s;
  }
  std::vector<int> made(comms.size(), 0), viaShm(comms.size(), 0);
  for (Pending& p : pending) {
    if (!live(p)) continue;
    ncclComm* comm = comms[p.comm];
    ATOLL_TRACE(log::kInit, "rank %d channel %d peer %d: %s", comm->rank, p.key.channel, p.key.peer,
                p.conn->describe().c_str());
    comm->links.table.set(p.key, std::move(p.conn));
    ++made[p.comm];
    viaShm[p.comm] += p.shm ? 1 : 0;
  }
  for (size_t i = 0; i < comms.size(); ++i)
    if (made[i] > 0)
      ATOLL_INFO(log::kInit, "comm %p rank %d: %d new links (%d shm, %d %s), %zu in all", (void*)comms[i],
                 comms[i]->rank, made[i], viaShm[i], made[i] - viaShm[i],
                 comms[i]->links.net ? comms[i]->links.net->name() : "socket",
                 comms[i]->links.table.size());
  return result;
}

Status connectAtInit(ncclComm* comm) {
  if (eagerLinks()) {
    ncclComm* self[] = {comm};
    std::vector<engine::LinkKey> all[] = {everyLink(comm)};
    ATOLL_CHECK(ensureLinks(self, all)[0]);
  }
  // No rank leaves init (and may fail a first call, tearing links down) before all have arrived.
  return comm->bootstrap->barrier();
}

uint32_t peerFlags(bool allowShm) { return allowShm ? transport::kPeerAllowsShm : 0; }

}  // namespace atl
