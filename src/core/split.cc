// ncclCommSplit: ranks agree on (color, key) over the parent's bootstrap; the lowest new rank of
// each color creates a fresh unique id and hands it to the other members, who then init normally.
#include <algorithm>
#include <cstring>
#include <vector>

#include "core/group.h"
#include "core/init.h"
#include "core/nccl_api.h"

using namespace atl;

namespace {

struct SplitEntry {
  int32_t color;
  int32_t key;
  int32_t rank;
};

constexpr uint32_t kSplitTagBase = 0x00530000u;  // away from the bootstrap's internal tags

Status split(ncclComm* comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  ATOLL_CHECK(checkComm(comm, "ncclCommSplit"));
  if (newcomm == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
    return ATOLL_ERROR(ncclInvalidArgument, "ncclCommSplit: color %d must be >= 0 or NCCL_SPLIT_NOCOLOR", color);
  ATOLL_ASSIGN_OR_RETURN(ncclConfig_t cfg, resolveConfig(config ? config : &comm->config));
  *newcomm = nullptr;

  std::vector<SplitEntry> all(static_cast<size_t>(comm->nranks));
  all[static_cast<size_t>(comm->rank)] = {color, key, comm->rank};
  ATOLL_CHECK(comm->bootstrap->allGather(std::as_writable_bytes(std::span(all)), sizeof(SplitEntry)));
  // Successive splits must not match each other's messages: number them (every rank counts every
  // split, including the ones it sits out).
  const uint32_t seq = comm->splitSeq++;
  if (color == NCCL_SPLIT_NOCOLOR) return Status::Ok();

  std::vector<SplitEntry> members;
  for (const SplitEntry& e : all)
    if (e.color == color) members.push_back(e);
  std::stable_sort(members.begin(), members.end(), [](const SplitEntry& a, const SplitEntry& b) {
    return a.key != b.key ? a.key < b.key : a.rank < b.rank;
  });
  int newRank = 0;
  while (members[static_cast<size_t>(newRank)].rank != comm->rank) ++newRank;
  const int leader = members[0].rank;
  const uint32_t tag = kSplitTagBase + ((seq & 0xffu) << 24) + static_cast<uint32_t>(color & 0xffff);

  ncclUniqueId id;
  if (comm->rank == leader) {
    ATOLL_ASSIGN_OR_RETURN(id, bootstrap::generateUniqueId(/*ignoreCommIdEnv=*/true));
    for (size_t i = 1; i < members.size(); ++i)
      ATOLL_CHECK(comm->bootstrap->send(members[i].rank, tag, std::as_bytes(std::span(&id, 1))));
  } else {
    ATOLL_CHECK(comm->bootstrap->recv(leader, tag, std::as_writable_bytes(std::span(&id, 1))));
  }
  ncclResult_t r = ncclCommInitRankConfig(newcomm, static_cast<int>(members.size()), id, newRank, &cfg);
  if (r != ncclSuccess) return Status(r);
  if (*newcomm) (*newcomm)->cudaDev = comm->cudaDev;
  return Status::Ok();
}

}  // namespace

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  return apiGuard(__func__, [&]() -> Status {
    // Inside a group (one thread splitting several communicators) the split is collective with
    // the others queued there, so it runs at ncclGroupEnd on a thread of its own, like init.
    if (!inGroup()) return split(comm, color, key, newcomm, config);
    ATOLL_CHECK(checkComm(comm, "ncclCommSplit"));
    if (newcomm == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
    *newcomm = nullptr;
    return enqueueInit([=] { return split(comm, color, key, newcomm, config); });
  });
}
