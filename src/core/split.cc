// ncclCommSplit: ranks agree on (color, key) over the parent's bootstrap; the lowest new rank of
// each color creates a fresh unique id and hands it to the other members, who then init normally.
#include <algorithm>
#include <cstring>
#include <functional>
#include <vector>

#include "algorithms/binomial.h"
#include "core/device_proxy.h"
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
constexpr uint32_t kShrinkTagBase = 0x00520000u;

/// `order` lists the parent ranks of the child communicator in child-rank order. Its first member
/// creates the child's unique id, which reaches the others down the broadcast's binomial tree over
/// the parent's bootstrap: ceil(log2 n) rounds. One rank sending it to each of the others in turn
/// took n - 1 message times, which atoll-sim (perf/sim) put at 0.56 s of a shrink at 8k ranks.
Status initChild(ncclComm* comm, const std::vector<int>& order, uint32_t tag, ncclConfig_t& cfg, ncclComm_t* newcomm) {
  const int newRank = static_cast<int>(std::find(order.begin(), order.end(), comm->rank) - order.begin());
  algo::CollSpec tree;
  tree.nranks = static_cast<int>(order.size());
  tree.rank = newRank;
  tree.root = 0;
  const algo::BinomialNode node = algo::binomialNode(tree);
  ncclUniqueId id;
  if (node.parent < 0) {
    ATOLL_ASSIGN_OR_RETURN(id, bootstrap::generateUniqueId(/*ignoreCommIdEnv=*/true));
  } else {
    ATOLL_CHECK(comm->bootstrap->recv(order[static_cast<size_t>(node.parent)], tag,
                                      std::as_writable_bytes(std::span(&id, 1))));
  }
  for (int child : node.children)
    ATOLL_CHECK(comm->bootstrap->send(order[static_cast<size_t>(child)], tag, std::as_bytes(std::span(&id, 1))));
  ncclResult_t r = ncclCommInitRankConfig(newcomm, static_cast<int>(order.size()), id, newRank, &cfg);
  if (r != ncclSuccess && r != ncclInProgress) return Status(r);
  if (r == ncclSuccess && *newcomm) (*newcomm)->cudaDev = comm->cudaDev;  // (a non-blocking init still runs)
  return Status(r);
}

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
  std::vector<int> order;
  for (const SplitEntry& e : members) order.push_back(e.rank);
  return initChild(comm, order, kSplitTagBase + ((seq & 0xffu) << 24) + static_cast<uint32_t>(color & 0xffff), cfg,
                   newcomm);
}

Status shrink(ncclComm* comm, const int* exclude, int excludeCount, ncclComm_t* newcomm, ncclConfig_t* config,
              int flags) {
  ATOLL_CHECK(checkComm(comm, "ncclCommShrink"));
  if (newcomm == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "ncclCommShrink: newcomm is NULL");
  if (excludeCount < 0 || (excludeCount > 0 && exclude == nullptr))
    return ATOLL_ERROR(ncclInvalidArgument, "ncclCommShrink: bad exclude list (count %d)", excludeCount);
  if (flags != NCCL_SHRINK_DEFAULT && flags != NCCL_SHRINK_ABORT)
    return ATOLL_ERROR(ncclInvalidArgument, "ncclCommShrink: unknown shrinkFlags %d", flags);
  std::vector<char> excluded(static_cast<size_t>(comm->nranks), 0);
  for (int i = 0; i < excludeCount; ++i) {
    int r = exclude[i];
    if (r < 0 || r >= comm->nranks)
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommShrink: excluded rank %d is out of range [0, %d)", r, comm->nranks);
    if (excluded[static_cast<size_t>(r)])
      return ATOLL_ERROR(ncclInvalidArgument, "ncclCommShrink: rank %d is excluded twice", r);
    excluded[static_cast<size_t>(r)] = 1;
  }
  if (excluded[static_cast<size_t>(comm->rank)])
    return ATOLL_ERROR(ncclInvalidUsage, "ncclCommShrink: rank %d is in the exclude list but called shrink", comm->rank);
  ATOLL_ASSIGN_OR_RETURN(ncclConfig_t cfg, resolveConfig(config ? config : &comm->config));
  *newcomm = nullptr;
  if (flags == NCCL_SHRINK_ABORT) {
    // Stop whatever another thread runs on the parent (it may wait on a dead rank) before reusing it.
    ATOLL_CHECK(abortActiveCalls(comm, "ncclCommShrink"));
    // The parent's bootstrap carries the new id below, so it must work again; the aborted calls
    // have already returned their error and the parent's data links are left as they were.
    comm->abortFlag.store(false, std::memory_order_release);
  }
  // Survivors only talk point to point over the parent's bootstrap, so excluded (possibly dead)
  // ranks are never waited for: the order is known to every survivor from the list alone.
  std::vector<int> order;
  for (int r = 0; r < comm->nranks; ++r)
    if (!excluded[static_cast<size_t>(r)]) order.push_back(r);
  const uint32_t seq = comm->splitSeq++;
  return initChild(comm, order, kShrinkTagBase + ((seq & 0xffu) << 24), cfg, newcomm);
}



}  // namespace

Status atl::deferToGroupEnd(ncclComm* comm, ncclComm_t* newcomm, const char* fn, std::function<Status()> derive) {
  ATOLL_CHECK(checkComm(comm, fn));
  if (newcomm == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = nullptr;
  return enqueueInit(std::move(derive));
}

NCCL_API(ncclResult_t, ncclCommShrink, ncclComm_t comm, int* excludeRanksList, int excludeRanksCount,
         ncclComm_t* newcomm, ncclConfig_t* config, int shrinkFlags) {
  return apiGuard(__func__, [&]() -> Status {
    if (isLiveComm(comm)) (void)drainDeviceCalls(comm);  // a failed call is the shrink's reason, not its error
    if (!inGroup()) return shrink(comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags);
    std::vector<int> list(excludeRanksList, excludeRanksList + std::max(excludeRanksCount, 0));
    return deferToGroupEnd(comm, newcomm, "ncclCommShrink",
                           [=] { return shrink(comm, list.data(), excludeRanksCount, newcomm, config, shrinkFlags); });
  });
}

NCCL_API(ncclResult_t, ncclCommSplit, ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config) {
  return apiGuard(__func__, [&]() -> Status {
    if (isLiveComm(comm)) ATOLL_CHECK(drainDeviceCalls(comm));
    if (!inGroup()) return split(comm, color, key, newcomm, config);
    return deferToGroupEnd(comm, newcomm, "ncclCommSplit", [=] { return split(comm, color, key, newcomm, config); });
  });
}
