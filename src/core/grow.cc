// ncclCommGetUniqueId / ncclCommGrow: a communicator gains ranks. One existing rank (the root)
// makes a fresh unique id and hands it to the new ranks out of band; the other existing ranks learn
// it from the root over the parent's bootstrap, then everyone joins the new communicator through
// the ordinary rendezvous. Existing ranks keep their numbers; new ranks take the ones above.
//
// The existing ranks do not know which of them is the root, so they find it with a binomial-tree
// reduce to rank 0 followed by a broadcast: ceil(log2 n) rounds and one small record per rank.
#include <cstring>

#include "bootstrap/bootstrap.h"
#include "core/device_proxy.h"
#include "core/group.h"
#include "core/init.h"
#include "core/nccl_api.h"

using namespace atl;

namespace {

constexpr uint32_t kGrowTagBase = 0x00470000u;  // away from the bootstrap's and split's tags

// Fixed-size and padding-free, so it travels as bytes between ranks of one build.
struct GrowRecord {
  int32_t ids = 0;    // existing ranks that passed an id (exactly one must)
  int32_t minted = 0;  // whether that id came from ncclCommGetUniqueId on this communicator
  ncclUniqueId id{};
};
static_assert(sizeof(GrowRecord) == 8 + sizeof(ncclUniqueId));

Status sendRecord(ncclComm* comm, int peer, uint32_t tag, const GrowRecord& r) {
  return comm->bootstrap->send(peer, tag, std::as_bytes(std::span(&r, 1)));
}
Status recvRecord(ncclComm* comm, int peer, uint32_t tag, GrowRecord* r) {
  return comm->bootstrap->recv(peer, tag, std::as_writable_bytes(std::span(r, 1)));
}

/// Every existing rank's record merged, the same on all of them.
Result<GrowRecord> agreeOnRoot(ncclComm* comm, GrowRecord mine, uint32_t tag) {
  const int n = comm->nranks, me = comm->rank;
  // Reduce up a binomial tree: a rank receives from rank+mask for each mask below its lowest set
  // bit, then sends to rank-lowbit.
  int mask = 1;
  for (; mask < n; mask <<= 1) {
    if ((me & mask) != 0) {
      ATOLL_CHECK(sendRecord(comm, me - mask, tag, mine));
      break;
    }
    if (me + mask < n) {
      GrowRecord child;
      ATOLL_CHECK(recvRecord(comm, me + mask, tag, &child));
      if (mine.ids == 0 && child.ids > 0) {
        mine.minted = child.minted;
        mine.id = child.id;
      }
      mine.ids += child.ids;
    }
  }
  // Broadcast down the same tree.
  if (me != 0) ATOLL_CHECK(recvRecord(comm, me - mask, tag + 1, &mine));
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (me + mask < n) ATOLL_CHECK(sendRecord(comm, me + mask, tag + 1, mine));
  }
  return mine;
}

Status growExisting(ncclComm* comm, int nRanks, const ncclUniqueId* uniqueId, ncclComm_t* newcomm,
                    ncclConfig_t* config) {
  ATOLL_CHECK(checkCommUsable(comm, "ncclCommGrow"));
  if (nRanks <= comm->nranks)
    return ATOLL_ERROR(ncclInvalidArgument, "ncclCommGrow: nRanks %d must exceed the communicator's %d ranks", nRanks,
                       comm->nranks);
  ATOLL_ASSIGN_OR_RETURN(ncclConfig_t cfg, resolveConfig(config ? config : &comm->config));
  GrowRecord mine;
  if (uniqueId != nullptr) {
    mine.ids = 1;
    mine.minted = comm->growIdPending.exchange(false) ? 1 : 0;
    mine.id = *uniqueId;
  }
  const uint32_t seq = comm->splitSeq++;
  ATOLL_ASSIGN_OR_RETURN(GrowRecord all, agreeOnRoot(comm, mine, kGrowTagBase + ((seq & 0xffu) << 8)));
  if (all.ids != 1)
    return ATOLL_ERROR(ncclInvalidUsage,
                       "ncclCommGrow: %d existing ranks passed a unique id; exactly one must (the rank that called "
                       "ncclCommGetUniqueId), the others NULL",
                       all.ids);
  if (!all.minted)
    return ATOLL_ERROR(ncclInvalidUsage,
                       "ncclCommGrow: the id was not made by ncclCommGetUniqueId on this communicator, or was used "
                       "already");
  ncclResult_t r = ncclCommInitRankConfig(newcomm, nRanks, all.id, comm->rank, &cfg);
  if (r == ncclSuccess && *newcomm) (*newcomm)->cudaDev = comm->cudaDev;
  return Status(r);
}

}  // namespace

NCCL_API(ncclResult_t, ncclCommGetUniqueId, ncclComm_t comm, ncclUniqueId* uniqueId) {
  return apiGuard(__func__, [&]() -> Status {
    ATOLL_CHECK(checkCommUsable(comm, "ncclCommGetUniqueId"));
    if (uniqueId == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommGetUniqueId: uniqueId is NULL");
    if (comm->growIdPending.load())
      return ATOLL_ERROR(ncclInvalidUsage,
                         "ncclCommGetUniqueId: the previous id has not been used by ncclCommGrow yet");
    // Its root serves this process until every rank of the grown communicator has joined.
    ATOLL_ASSIGN_OR_RETURN(*uniqueId, bootstrap::generateUniqueId(/*ignoreCommIdEnv=*/true));
    comm->growIdPending.store(true);
    return Status::Ok();
  });
}

NCCL_API(ncclResult_t, ncclCommGrow, ncclComm_t comm, int nRanks, const ncclUniqueId* uniqueId, int rank,
         ncclComm_t* newcomm, ncclConfig_t* config) {
  return apiGuard(__func__, [&]() -> Status {
    if (newcomm == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommGrow: newcomm is NULL");
    if (comm != nullptr && isLiveComm(comm)) ATOLL_CHECK(drainDeviceCalls(comm));
    if (comm == nullptr) {
      // A new rank: an ordinary init with the id the root handed out.
      if (uniqueId == nullptr)
        return ATOLL_ERROR(ncclInvalidArgument, "ncclCommGrow: a new rank (comm NULL) needs the root's unique id");
      if (rank < 0 || rank >= nRanks)
        return ATOLL_ERROR(ncclInvalidArgument, "ncclCommGrow: new rank %d is out of range [0, %d)", rank, nRanks);
      return Status(ncclCommInitRankConfig(newcomm, nRanks, *uniqueId, rank, config));
    }
    if (rank != -1)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommGrow: existing ranks pass rank -1 (got %d)", rank);
    if (!inGroup()) return growExisting(comm, nRanks, uniqueId, newcomm, config);
    const bool hasId = uniqueId != nullptr;
    const ncclUniqueId id = hasId ? *uniqueId : ncclUniqueId{};
    return deferToGroupEnd(comm, newcomm, "ncclCommGrow", [=] {
      return growExisting(comm, nRanks, hasId ? &id : nullptr, newcomm, config);
    });
  });
}
