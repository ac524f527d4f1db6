#include <unistd.h>

#include <atomic>
#include <mutex>
#include <unordered_set>

#include "core/comm.h"
#include "core/device_proxy.h"

namespace atl {
namespace {
std::mutex gMutex;
std::unordered_set<const ncclComm*>& live() {
  static auto* set = new std::unordered_set<const ncclComm*>();  // never destroyed: usable during exit
  return *set;
}
// Every collective checks its communicator, and a locked set lookup costs as much as a whole
// in-cache 8-byte all-reduce step. So each thread remembers the last communicator it found live,
// with the registry's generation then; any register or unregister moves the generation on and
// so voids every memo, and a hit is one acquire load.
std::atomic<uint64_t> gGeneration{1};
struct LiveMemo {
  const ncclComm* comm = nullptr;
  uint64_t generation = 0;
};
thread_local LiveMemo tLiveMemo;
}  // namespace

void registerComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  live().insert(comm);
  gGeneration.fetch_add(1, std::memory_order_release);
}
void unregisterComm(ncclComm* comm) {
  std::lock_guard<std::mutex> lock(gMutex);
  live().erase(comm);
  gGeneration.fetch_add(1, std::memory_order_release);
}
bool isLiveComm(const ncclComm* comm) {
  LiveMemo& memo = tLiveMemo;
  if (comm != nullptr && memo.comm == comm && memo.generation == gGeneration.load(std::memory_order_acquire))
    return true;
  std::lock_guard<std::mutex> lock(gMutex);
  const bool isLive = live().count(comm) != 0;
  if (isLive) memo = {comm, gGeneration.load(std::memory_order_relaxed)};
  return isLive;
}

Status abortActiveCalls(ncclComm* comm, const char* caller) {
  comm->abortFlag.store(true, std::memory_order_release);
  // Queued device calls run now and fail at once on the abort flag, releasing their streams.
  (void)drainDeviceCalls(comm);
  for (int i = 0; i < 10000 && comm->activeCalls.load() > 0; ++i) usleep(1000);
  if (comm->activeCalls.load() > 0)
    return ATOLL_ERROR(ncclInternalError, "%s: a call did not leave the communicator within 10 s", caller);
  return Status::Ok();
}

Status checkCommUsable(const ncclComm* comm, const char* caller) {
  ATOLL_CHECK(checkComm(comm, caller));
  if (comm->suspended.load(std::memory_order_acquire))
    return ATOLL_ERROR(ncclInvalidUsage, "%s: the communicator is suspended (ncclCommSuspend); call ncclCommResume first",
                       caller);
  if (comm->revoke.load(std::memory_order_acquire) != RevokeState::Live)
    return ATOLL_ERROR(ncclInvalidUsage,
                       "%s: the communicator was revoked (ncclCommRevoke); only destroy, abort, split or shrink may "
                       "follow",
                       caller);
  return Status::Ok();
}

Status checkComm(const ncclComm* comm, const char* caller) {
  if (comm == nullptr) return ATOLL_ERROR(ncclInvalidArgument, "%s: comm is NULL", caller);
  if (!isLiveComm(comm))
    return ATOLL_ERROR(ncclInvalidArgument, "%s: %p is not a live communicator (destroyed or never created)", caller,
                       static_cast<const void*>(comm));
  switch (comm->state.load(std::memory_order_acquire)) {
    case CommState::Ready: return Status::Ok();
    case CommState::Initializing:
      return ATOLL_ERROR(ncclInvalidUsage, "%s: communicator initialisation has not completed", caller);
    case CommState::Failed:
      return ATOLL_ERROR(ncclInvalidUsage, "%s: communicator failed to initialise or was aborted", caller);
  }
  return Status::Ok();
}

}  // namespace atl
