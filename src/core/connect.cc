#include "core/connect.h"

#include <set>
#include <vector>

#include "core/debug.h"

namespace atl {
namespace {

constexpr int32_t kPeerAllowsShm = 1;

struct Pending {
  int channel;
  int peer;
  std::unique_ptr<transport::Connector> connector;
};

}  // namespace

Status connectPeers(ncclComm* comm) {
  CommLinks& links = comm->links;
  const transport::Context& ctx = links.context;
  const transport::PeerInfo& me = ctx.peers[comm->rank];
  links.table.resize(links.nchannels, comm->nranks);
  std::vector<Pending> pending;
  int viaShm = 0, viaSocket = 0;
  for (int c = 0; c < links.nchannels; ++c) {
    std::set<int> peers;
    // Channels 0 and 1 link every pair: the double binary tree runs one tree on each.
    if (c <= 1) {
      for (int p = 0; p < comm->nranks; ++p)
        if (p != comm->rank) peers.insert(p);
    } else if (comm->nranks > 1) {
      peers.insert((comm->rank + 1) % comm->nranks);
      peers.insert((comm->rank + comm->nranks - 1) % comm->nranks);
    }
    for (int p : peers) {
      const transport::PeerInfo& other = ctx.peers[p];
      // Both ends must make the same choice, so it depends only on data both sides have.
      bool shm = (me.reserved & kPeerAllowsShm) && (other.reserved & kPeerAllowsShm) &&
                 links.shm->canConnect(me, other);
      transport::Transport& t = shm ? *links.shm : *links.socket;
      (shm ? viaShm : viaSocket)++;
      ATOLL_ASSIGN_OR_RETURN(auto connector, t.prepare(p, c));
      pending.push_back({c, p, std::move(connector)});
    }
  }
  // Every rank has created its receiving side before anyone connects.
  ATOLL_CHECK(comm->bootstrap->barrier());
  for (Pending& p : pending) ATOLL_CHECK(p.connector->connect());
  for (Pending& p : pending) {
    ATOLL_ASSIGN_OR_RETURN(auto conn, p.connector->finish());
    ATOLL_TRACE(log::kInit, "channel %d peer %d: %s", p.channel, p.peer, conn->describe().c_str());
    links.table.set(p.channel, p.peer, std::move(conn));
  }
  // A rank's links are done before its peers' are (shm: the peer may not have attached to the ring
  // this rank created yet). Without this barrier a rank could launch, fail (ATOLL_CHECK, a peer
  // that gave up) and tear its rings down while a peer still waits to attach to one, which then
  // hangs in init until the setup timeout instead of failing with the rest.
  ATOLL_CHECK(comm->bootstrap->barrier());
  ATOLL_INFO(log::kInit, "comm %p rank %d nranks %d: %d channels, %d shm links, %d socket links", (void*)comm,
             comm->rank, comm->nranks, links.nchannels, viaShm, viaSocket);
  return Status::Ok();
}

int32_t peerFlags(bool allowShm) { return allowShm ? kPeerAllowsShm : 0; }

}  // namespace atl
